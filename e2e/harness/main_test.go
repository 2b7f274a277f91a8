package harness

import (
	"testing"

	"go.uber.org/goleak"
)

// srv is shared by the tests of this package: Main starts it once and stops it after them.
var srv *Server

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(Main(m, Options{}, func(s *Server) { srv = s }))
}
