// Package sharding runs sharded informers (package shard) against two real kube-apiservers: one
// with the ShardedListAndWatch feature gate on, which filters by shard selector, and one with it
// off, which ignores the selector so that the replicas filter on their side.
package sharding

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/typedkube/informer/e2e/harness"
	"github.com/typedkube/informer/e2e/internal/kubetest"
)

// gateOn serves sharded lists and watches; gateOff does not.
var gateOn, gateOff *harness.Server

func TestMain(m *testing.M) {
	if spec := os.Getenv(replicaEnv); spec != "" {
		os.Exit(runReplicaProcess(spec)) // a replica process a test started
	}
	code := run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var errOn, errOff error
	wg.Go(func() {
		gateOn, errOn = harness.Start(ctx, harness.Options{
			LogDir:        kubetest.LogDir("sharding-gate-on"),
			APIServerArgs: []string{"--feature-gates=ShardedListAndWatch=true"},
		})
	})
	wg.Go(func() {
		gateOff, errOff = harness.Start(ctx, harness.Options{LogDir: kubetest.LogDir("sharding-gate-off")})
	})
	wg.Wait()
	defer func() {
		for _, s := range []*harness.Server{gateOn, gateOff} {
			if s != nil {
				if err := s.Stop(); err != nil {
					fmt.Fprintln(os.Stderr, err)
				}
			}
		}
	}()
	if errOn != nil || errOff != nil {
		fmt.Fprintln(os.Stderr, "sharding: servers:", errOn, errOff)
		return 1
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "sharding: tests failed; server logs in %s and %s\n", gateOn.APIServerLogPath(), gateOff.APIServerLogPath())
	}
	return code
}
