package chainerc

import "testing"

// The array functions of issue 42 from Go: values of get_item (a negative
// step and an index array), flip, pad, tile, repeat, stack and split_axis,
// and check_backward of each through the graph.
func TestArrayFunctions(t *testing.T) {
	noLeak(t, func() {
		x := must(VariableOf([]float64{0, 1, 2, 3, 4, 5}, 2, 3))
		defer x.Close()
		idx := must(NewArray([]int32{2, 0, 2}))
		defer idx.Close()
		y := must(GetItem(x, Slice(nil, nil, -1), IndexArray(idx)))
		defer y.Close()
		d := must(y.Data())
		defer d.Close()
		want := must(NewArray([]float64{5, 3, 5, 2, 0, 2}, 2, 3))
		defer want.Close()
		ok(t, d.AllClose(want, 0, 0))

		xa := must(NewArray(values(12, 11, -1, 1), 3, 4))
		defer xa.Close()
		one := int32(1)
		fs := map[string]GraphFunc{
			"get_item": g1(func(v []*Variable) (*Variable, error) { return GetItem(v[0], At(-1), Slice(nil, nil, 2)) }),
			"flip":     g1(func(v []*Variable) (*Variable, error) { return Flip(v[0], 1) }),
			"pad":      g1(func(v []*Variable) (*Variable, error) { return Pad(v[0], []int32{1, 2}, 0.5) }),
			"tile":     g1(func(v []*Variable) (*Variable, error) { return Tile(v[0], 2, 1) }),
			"repeat":   g1(func(v []*Variable) (*Variable, error) { return Repeat(v[0], []int32{2}, &one) }),
			"squeeze": g1(func(v []*Variable) (*Variable, error) {
				e, _ := ExpandDims(v[0], 0)
				defer e.Close()
				return Squeeze(e)
			}),
			"stack": g1(func(v []*Variable) (*Variable, error) { return Stack([]*Variable{v[0], v[0]}, 1) }),
			"scatter_add": g1(func(v []*Variable) (*Variable, error) {
				return ScatterAdd(v[0], []Index{IndexArray(idx)}, v[0])
			}),
			"split_axis": func(v []*Variable) ([]*Variable, error) { return SplitAxisAt(v[0], []int64{1}, 1) },
		}
		for name, g := range fs {
			gys := []*Array{nil}
			if name == "split_axis" {
				gys = []*Array{nil, nil}
			}
			if err := CheckBackwardGraph(g, []*Array{xa}, gys, nnTol); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		_, err := GetItem(x, At(2))
		if statusOf(err) != ErrInvalidArgument {
			t.Errorf("x[2] of a (2, 3) x: %v", err)
		}
	})
}
