package informer

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedkube/informer/internal/testobj"
)

func TestFilteringResourceEventHandler(t *testing.T) {
	web := func(p *corev1.Pod) bool { return p.Labels["app"] == "web" }
	a := testobj.Pod("ns", "a", "1", "app=web")
	a2 := testobj.Pod("ns", "a", "2", "app=db")
	a3 := testobj.Pod("ns", "a", "3", "app=web")
	b := testobj.Pod("ns", "b", "1", "app=db")
	rec := &recorder{}
	h := FilteringResourceEventHandler[*corev1.Pod]{FilterFunc: web, Handler: rec}
	h.OnAdd(a, true)
	h.OnAdd(b, false)                                                                     // filtered out
	h.OnUpdate(a, a2)                                                                     // leaves the filter: a delete
	h.OnUpdate(b, b)                                                                      // outside: nothing
	h.OnUpdate(a2, a3)                                                                    // enters the filter: an add
	h.OnUpdate(a3, a3)                                                                    // inside: an update
	h.OnDelete(DeletedObject[*corev1.Pod]{Obj: b, Key: "ns/b"})                           // filtered out
	h.OnDelete(DeletedObject[*corev1.Pod]{Key: "ns/gone", FinalStateUnknown: true})       // unknown: passed on
	h.OnDelete(DeletedObject[*corev1.Pod]{Obj: a3, Key: "ns/a", FinalStateUnknown: true}) // accepted
	checkCalls(t, rec,
		"add ns/a@1 initial",
		"delete ns/a@1",
		"add ns/a@3",
		"update ns/a@3 -> ns/a@3",
		"delete <nil> key=ns/gone unknown",
		"delete ns/a@3 unknown")
}

func TestResourceEventHandlerFuncsIgnoreNil(t *testing.T) {
	var h ResourceEventHandlerFuncs[*corev1.Pod]
	p := testobj.Pod("ns", "a", "1")
	h.OnAdd(p, false)
	h.OnUpdate(p, p)
	h.OnDelete(DeletedObject[*corev1.Pod]{Obj: p})
}
