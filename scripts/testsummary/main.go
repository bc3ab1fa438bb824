// Command testsummary reads `go test -json` on stdin and prints progress
// and a closing summary (see internal/testsummary); scripts/test.sh pipes
// the suite through it. It exits 1 when a package failed.
package main

import (
	"fmt"
	"os"

	"github.com/switchboardhq/switchboard/internal/testsummary"
)

func main() {
	res, err := testsummary.Summarize(os.Stdin, os.Stdout, testsummary.Options{Module: "github.com/switchboardhq/switchboard"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if res.Failed > 0 {
		os.Exit(1)
	}
}
