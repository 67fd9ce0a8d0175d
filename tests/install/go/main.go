// Built outside the repository against the installed libchainerc-dev
// (scripts/packaging.sh): the module chainerc.dev/chainerc finds the library
// through `#cgo pkg-config: chainerc`. y = sum(x * x) at x = (1, 2, 3):
// y = 14, dy/dx = 2x.
package main

import (
	"fmt"
	"math"
	"os"

	ch "chainerc.dev/chainerc"
)

func main() {
	x, err := ch.VariableOf([]float64{1, 2, 3})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	defer x.Close()
	xx, _ := ch.Mul(x, x)
	defer xx.Close()
	y, _ := ch.Sum(xx)
	defer y.Close()
	if err := y.Backward(); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	yv, _ := y.Float64s()
	g, _ := x.GradFloat64s()
	fmt.Println("y =", yv, "grad =", g)
	if len(yv) != 1 || math.Abs(yv[0]-14) > 1e-12 || len(g) != 3 {
		os.Exit(1)
	}
	for i, want := range []float64{2, 4, 6} {
		if math.Abs(g[i]-want) > 1e-12 {
			os.Exit(1)
		}
	}
	// Bad input is an error value naming the problem, not a crash.
	if _, err := ch.NewArray([]float64{1, 2, 3}, 2); err == nil || err.Error() == "" {
		fmt.Println("no error for 3 values in shape (2)")
		os.Exit(1)
	}
}
