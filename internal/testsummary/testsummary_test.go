package testsummary

import (
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	const mod = "example.com/m"
	in := strings.Join([]string{
		`{"Action":"start","Package":"example.com/m/internal/a"}`,
		`{"Action":"start","Package":"example.com/m/internal/a/sub"}`,
		`{"Action":"run","Package":"example.com/m/internal/a","Test":"TestOK"}`,
		`{"Action":"output","Package":"example.com/m/internal/a","Test":"TestOK","Output":"noise of a passing test\n"}`,
		`{"Action":"pass","Package":"example.com/m/internal/a","Test":"TestOK","Elapsed":0.1}`,
		`{"Action":"output","Package":"example.com/m/internal/a","Output":"ok  \texample.com/m/internal/a\t2.000s\n"}`,
		`{"Action":"pass","Package":"example.com/m/internal/a","Elapsed":2}`,
		`{"Action":"run","Package":"example.com/m/internal/a/sub","Test":"TestBad"}`,
		`{"Action":"output","Package":"example.com/m/internal/a/sub","Test":"TestBad","Output":"    bad_test.go:9: wrong answer\n"}`,
		`{"Action":"output","Package":"example.com/m/internal/a/sub","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}`,
		`{"Action":"fail","Package":"example.com/m/internal/a/sub","Test":"TestBad","Elapsed":0}`,
		`{"Action":"output","Package":"example.com/m/internal/a/sub","Output":"FAIL\texample.com/m/internal/a/sub\t5.000s\n"}`,
		`{"Action":"fail","Package":"example.com/m/internal/a/sub","Elapsed":5}`,
		`# example.com/m/internal/broken`,
		`{"Action":"start","Package":"example.com/m/cmd/x"}`,
		`{"Action":"output","Package":"example.com/m/cmd/x","Output":"?   \texample.com/m/cmd/x\t[no test files]\n"}`,
		`{"Action":"skip","Package":"example.com/m/cmd/x","Elapsed":0}`,
	}, "\n") + "\n"
	clock := time.Unix(0, 0)
	now := func() time.Time { clock = clock.Add(30 * time.Second); return clock }
	var out strings.Builder
	res, err := Summarize(strings.NewReader(in), &out, Options{Module: mod, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed != 1 || res.Failed != 1 || res.NoTests != 1 || len(res.FailedPackages) != 1 ||
		res.Slowest[0].Package != "example.com/m/internal/a/sub" || res.Slowest[0].Elapsed != 5*time.Second {
		t.Errorf("result = %+v", res)
	}
	got := out.String()
	for _, want := range []string{
		"] testing internal/a\n",
		"ok  \texample.com/m/internal/a\t2.000s\n", // go test's own lines, unchanged
		"FAIL\texample.com/m/internal/a/sub\t5.000s\n",
		"bad_test.go:9: wrong answer\n", // a failed test's output
		"# example.com/m/internal/broken\n",
		"] internal/a done, 1 package(s) FAILED (2 packages finished so far)\n",
		"==> summary: 1 packages passed, 1 failed, 1 without tests; total time ",
		"    FAILED  example.com/m/internal/a/sub\n",
		"        5.0s  example.com/m/internal/a/sub\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "noise of a passing test") {
		t.Errorf("a passing test's output is shown:\n%s", got)
	}
	if strings.Count(got, "testing internal/a\n") != 1 {
		t.Errorf("the group started more than once:\n%s", got)
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		950 * time.Millisecond: "950ms", 12340 * time.Millisecond: "12.3s", 245 * time.Second: "4m05s",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// A package that times out fails without a "fail" event for the test that
// hung; go test attributes the timeout's panic and goroutine dump to that
// test (the shape below is go 1.26's). Its output is printed under a line
// naming it, or the run's log would not say which test hung.
func TestSummarizeTimedOutPackage(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"start","Package":"example.com/m/a"}`,
		`{"Action":"run","Package":"example.com/m/a","Test":"TestFine"}`,
		`{"Action":"output","Package":"example.com/m/a","Test":"TestFine","Output":"fine's noise\n"}`,
		`{"Action":"pass","Package":"example.com/m/a","Test":"TestFine","Elapsed":0}`,
		`{"Action":"run","Package":"example.com/m/a","Test":"TestHangs"}`,
		`{"Action":"output","Package":"example.com/m/a","Test":"TestHangs","Output":"=== RUN   TestHangs\n"}`,
		`{"Action":"output","Package":"example.com/m/a","Test":"TestHangs","Output":"panic: test timed out after 2s\n"}`,
		`{"Action":"output","Package":"example.com/m/a","Test":"TestHangs","Output":"example.com/m/a.TestHangs(0x2161f107a908?)\n"}`,
		`{"Action":"output","Package":"example.com/m/a","Output":"FAIL\texample.com/m/a\t2.005s\n"}`,
		`{"Action":"fail","Package":"example.com/m/a","Elapsed":2.005}`,
		`{"Action":"start","Package":"example.com/m/b"}`,
		`{"Action":"run","Package":"example.com/m/b","Test":"TestCut"}`,
		`{"Action":"output","Package":"example.com/m/b","Test":"TestCut","Output":"last words\n"}`,
	}, "\n") + "\n"
	var out strings.Builder
	res, err := Summarize(strings.NewReader(in), &out, Options{Module: "example.com/m"})
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if res.Failed != 1 {
		t.Errorf("result = %+v", res)
	}
	for _, want := range []string{
		"--- DID NOT END: TestHangs (example.com/m/a)\n=== RUN   TestHangs\npanic: test timed out after 2s\nexample.com/m/a.TestHangs(",
		"--- DID NOT END: TestCut (example.com/m/b)\nlast words\n", // a stream cut short
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "fine's noise") || strings.Index(got, "DID NOT END: TestHangs") > strings.Index(got, "==> summary") {
		t.Errorf("wrong output:\n%s", got)
	}
}
