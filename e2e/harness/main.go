package harness

import (
	"context"
	"fmt"
	"os"
	"time"
)

// M is what a TestMain receives (*testing.M) and what goleak.VerifyTestMain accepts.
type M interface{ Run() int }

// Main wraps m so that Run starts the servers with opts, hands them to use (typically to store
// them in a package variable the tests read), runs the tests, and stops the servers. Pass the
// result to goleak.VerifyTestMain, which then checks for leaked goroutines after Stop:
//
//	var srv *harness.Server
//
//	func TestMain(m *testing.M) {
//		goleak.VerifyTestMain(harness.Main(m, harness.Options{}, func(s *harness.Server) { srv = s }))
//	}
//
// Without goleak: os.Exit(harness.Main(m, opts, use).Run()). Run returns 1 when the servers do not
// start (the error goes to stderr) or do not stop cleanly. When a test failed it prints the last
// lines of both servers' logs first. Building missing binaries is allowed up to 20 minutes.
func Main(m M, opts Options, use func(*Server)) M {
	return mainRunner{m: m, opts: opts, use: use}
}

type mainRunner struct {
	m    M
	opts Options
	use  func(*Server)
}

func (r mainRunner) Run() int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	s, err := Start(ctx, r.opts)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	r.use(s)
	code := r.m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "harness: tests failed; last lines of %s:\n%s\n", s.APIServerLogPath(), fileTail(s.APIServerLogPath(), 30))
		fmt.Fprintf(os.Stderr, "harness: last lines of %s:\n%s\n", s.EtcdLogPath(), fileTail(s.EtcdLogPath(), 10))
	}
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
