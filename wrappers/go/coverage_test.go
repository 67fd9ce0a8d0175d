package chainerc

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Functions of the C API deliberately not wrapped, with the reason.
var notWrapped = map[string]string{
	"ch_error_status":              "errors are read inside each helper (gres)",
	"ch_error_message":             "read inside each helper (capi_gen.c)",
	"ch_error_set":                 "used by the callback helper gch_fail (capi_extra.c)",
	"ch_error_set_payload":         "used by gch_fail (capi_extra.c)",
	"ch_error_take_payload":        "read inside each helper (capi_gen.c)",
	"ch_array_wrap":                "Go memory may not be kept by C (cgo rules); NewArray copies",
	"ch_context_set_user_data":     "Go callbacks keep per-application state in Go (Context.Save for arrays)",
	"ch_context_user_data":         "as ch_context_set_user_data",
	"ch_device_cpu":                "CPU is a value",
	"ch_function_new":              "called by gch_function_new (capi_extra.c)",
	"ch_optimizer_new":             "called by gch_optimizer_new (capi_extra.c)",
	"ch_numerical_grad":            "called by gch_numerical_grad (capi_extra.c)",
	"ch_check_backward_graph":      "called by gch_check_backward_graph (capi_extra.c)",
	"ch_memory_set_oom_hook":       "a C function pointer called from inside a device allocation; not offered to Go until it can be tested on a GPU",
	"ch_optimizer_set_update_hook": "a C hook for C libraries (libchainerc_mpi's multi-node optimizer); Go code runs its own step before Update",
}

// Every CH_API function of include/ch/*.h is reached from the Go package
// (as C.g_<name>, C.<name>, or inside capi_extra.c), or listed above.
func TestEveryCFunctionIsWrapped(t *testing.T) {
	headers, _ := filepath.Glob("../../include/ch/*.h")
	if len(headers) == 0 {
		t.Skip("headers not found")
	}
	decl := regexp.MustCompile(`CH_API\s+[^;(]*?\b(ch_\w+)\s*\(`)
	var src strings.Builder
	files, _ := filepath.Glob("*.go")
	extra, _ := filepath.Glob("capi_extra.c")
	for _, f := range append(files, extra...) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.WriteString(string(b))
	}
	all := src.String()
	n := 0
	for _, h := range headers {
		// libchainerc_mpi's header: its functions are not in libchainerc; they
		// are wrapped in distributed.go (build tag chainerc_mpi), checked by
		// TestDistributedWrapsEveryFunction.
		if filepath.Base(h) == "distributed.h" {
			continue
		}
		b, err := os.ReadFile(h)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			name := m[1]
			if strings.Contains(name, "CH_API") {
				continue
			}
			n++
			if _, ok := notWrapped[name]; ok {
				continue
			}
			if !strings.Contains(all, "C.g_"+name+"(") && !strings.Contains(all, "C."+name+"(") && !strings.Contains(all, name+"(") {
				t.Errorf("%s is not wrapped", name)
			}
		}
	}
	if n < 90 {
		t.Fatalf("parsed only %d functions", n)
	}
}
