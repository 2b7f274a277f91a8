package report

import (
	"flag"
	"testing"

	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// testdata is bench/testdata, shared by the module's tests.
const testdata = "../../testdata"

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
