//go:build chainerc_mpi

package chainerc

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestDistributedTwoRanks runs TestDistributedWorker on 2 ranks under mpirun.
func TestDistributedTwoRanks(t *testing.T) {
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("mpirun not found")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", exe,
		"-test.run", "^TestDistributedWorker$", "-test.v")
	cmd.Env = append(os.Environ(), "CH_GO_MPI_WORKER=1", "OMPI_MCA_mpi_yield_when_idle=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mpirun: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "rank 0: ok") || !strings.Contains(string(out), "rank 1: ok") {
		t.Fatalf("missing rank output:\n%s", out)
	}
}

func TestDistributedWorker(t *testing.T) {
	if os.Getenv("CH_GO_MPI_WORKER") == "" {
		t.Skip("run by TestDistributedTwoRanks under mpirun")
	}
	c, err := NewCommunicator()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.Close()
		if err := FinalizeMPI(); err != nil {
			t.Error(err)
		}
	}()
	rank := c.Rank()
	if c.Size() != 2 || c.IntraSize() != 2 {
		t.Fatalf("size %d intra %d", c.Size(), c.IntraSize())
	}
	a, _ := NewArray([]float64{float64(rank), 1}, 2)
	if err := c.AllreduceArray(a, ReduceSum); err != nil {
		t.Fatal(err)
	}
	if v, _ := Values[float64](a); v[0] != 1 || v[1] != 2 {
		t.Fatalf("sum %v", v)
	}
	idx, err := c.ScatterIndices(9, true, 3)
	if err != nil || len(idx) != 5 {
		t.Fatalf("scatter %v %v", idx, err)
	}
	model := func(hidden int64, seed uint64) *FunctionSet {
		Seed(seed)
		s, _ := NewFunctionSet()
		o := DefaultLinear()
		o.Dtype = Float64
		l1, _ := NewLinear(3, hidden, o)
		l2, _ := NewLinear(hidden, 2, o)
		s.Add("l1", l1)
		s.Add("l2", l2)
		return s
	}
	m := model(4, uint64(1+rank))
	sgd, _ := NewSGD(0.1)
	opt, err := MultiNodeOptimizer(sgd, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := opt.Setup(m); err != nil {
		t.Fatal(err)
	}
	if err := c.BcastData(m); err != nil {
		t.Fatal(err)
	}
	opt.ZeroGrads()
	xa, _ := NewArray([]float64{0.5 + float64(rank), -1, 2}, 1, 3)
	ta, _ := NewArray([]int32{int32(rank)}, 1)
	x, _ := NewVariable(xa)
	tv, _ := NewVariable(ta)
	l1, _ := m.Get("l1")
	l2, _ := m.Get("l2")
	h, _ := l1.Apply1(x)
	h, _ = Tanh(h)
	y, _ := l2.Apply1(h)
	loss, err := SoftmaxCrossEntropy(y, tv)
	if err != nil {
		t.Fatal(err)
	}
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	if err := opt.Update(); err != nil {
		t.Fatal(err)
	}
	params, _ := m.Parameters()
	for _, p := range params {
		mine, _ := Values[float64](p.Param)
		mean, _ := NewArray(mine, int64(len(mine)))
		c.AllreduceArray(mean, ReduceMean)
		got, _ := Values[float64](mean)
		for i := range mine {
			if got[i] != mine[i] {
				t.Fatalf("%s differs across ranks: %v vs mean %v", p.Name, mine, got)
			}
		}
	}
	bad := model(int64(4+rank), 1)
	err = c.AllreduceGrads(bad)
	var ce *Error
	if !errors.As(err, &ce) || ce.Status != ErrInvalidArgument || !strings.Contains(ce.Message, "on rank 0 but") {
		t.Fatalf("mismatch: %v", err)
	}
	if err := c.Barrier(); err != nil {
		t.Fatal(err)
	}
	t.Logf("rank %d: ok", rank)
	os.Stdout.WriteString("rank " + string(rune('0'+rank)) + ": ok\n")
}

// Every CH_API function of distributed.h is called from distributed.go (the
// package's coverage test skips that header: it is libchainerc_mpi's).
func TestDistributedWrapsEveryFunction(t *testing.T) {
	h, err := os.ReadFile("../../include/ch/distributed.h")
	if err != nil {
		t.Skip("header not found")
	}
	src, err := os.ReadFile("distributed.go")
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`CH_API\s+[^;(]*?\b(ch_\w+)\s*\(`)
	n := 0
	for _, m := range decl.FindAllStringSubmatch(string(h), -1) {
		n++
		if m[1] == "ch_communicator_retain" {
			continue // a *Communicator is one reference: share the pointer
		}
		if !strings.Contains(string(src), m[1]+"(") {
			t.Errorf("%s is not wrapped", m[1])
		}
	}
	if n < 10 {
		t.Fatalf("parsed only %d functions", n)
	}
}
