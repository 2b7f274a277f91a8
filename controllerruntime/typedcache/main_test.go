package typedcache

import (
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func TestMain(m *testing.M) {
	// The cache logs through controller-runtime's logger, which warns, with a
	// stack, when a program runs 30 s without setting it.
	ctrllog.SetLogger(logr.Discard())
	goleak.VerifyTestMain(m)
}
