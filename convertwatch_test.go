package informer

import (
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedkube/informer/internal/testobj"
)

// A converting watch converts each event, in order, and its goroutine ends
// when it is stopped while a converted event waits to be read (the reader
// gave up): apimachinery's watch.Filter, used before, stayed blocked on
// that send for ever.
func TestConvertingWatch(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	in := watch.NewFakeWithChanSize(2, false)
	w := newConvertingWatch(in, func(ev watch.Event) watch.Event {
		p := ev.Object.(*corev1.Pod).DeepCopy()
		p.Labels = map[string]string{"converted": "yes"}
		ev.Object = p
		return ev
	})
	in.Add(testobj.Pod("ns", "a", "2"))
	in.Modify(testobj.Pod("ns", "a", "3"))
	ev := <-w.ResultChan()
	if p := ev.Object.(*corev1.Pod); ev.Type != watch.Added || p.ResourceVersion != "2" || p.Labels["converted"] != "yes" {
		t.Fatalf("first event %v %v", ev.Type, p)
	}
	// The second event is converted and waits to be sent; nobody reads it.
	w.Stop()
	w.Stop() // twice is fine
	goleak.VerifyNone(t, ignore)
}
