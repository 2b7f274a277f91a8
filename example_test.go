package informer_test

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/typedkube/informer"
)

func pod(ns, name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

func ExampleStore() {
	store := informer.NewStore(informer.MetaNamespaceKeyFunc[*corev1.Pod])
	store.Add(pod("default", "web-1", "node-a"))
	store.Add(pod("default", "web-2", "node-b"))
	store.Update(pod("default", "web-1", "node-c"))

	p, ok := store.GetByKey("default/web-1")
	fmt.Println(p.Spec.NodeName, ok) // typed: no assertion
	keys := slices.Sorted(store.Keys())
	fmt.Println(keys)
	// Output:
	// node-c true
	// [default/web-1 default/web-2]
}

func ExampleIndexer() {
	byNode := func(p *corev1.Pod) ([]string, error) { return []string{p.Spec.NodeName}, nil }
	pods := informer.NewIndexer(informer.MetaNamespaceKeyFunc[*corev1.Pod], informer.Indexers[*corev1.Pod]{
		informer.NamespaceIndex: informer.MetaNamespaceIndexFunc[*corev1.Pod],
		"node":                  byNode,
	})
	pods.Add(pod("default", "web-1", "node-a"))
	pods.Add(pod("default", "web-2", "node-a"))
	pods.Add(pod("kube-system", "dns", "node-b"))

	onA, _ := pods.IndexKeys("node", "node-a")
	fmt.Println(onA)
	for key, p := range pods.ByIndexSeq(informer.NamespaceIndex, "kube-system") {
		fmt.Println(key, p.Spec.NodeName)
	}
	// Output:
	// [default/web-1 default/web-2]
	// kube-system/dns node-b
}

func ExampleFIFO() {
	q := informer.NewFIFO(informer.MetaNamespaceKeyFunc[*corev1.Pod])
	q.Add(pod("default", "a", "node-1"))
	q.Add(pod("default", "b", "node-1"))
	q.Update(pod("default", "a", "node-2")) // replaces a, keeps its place

	for range 2 {
		q.Pop(func(p *corev1.Pod, _ bool) error {
			fmt.Println(p.Name, p.Spec.NodeName)
			return nil
		})
	}
	// Output:
	// a node-2
	// b node-1
}

func ExampleDeltaFIFO() {
	// The consumer's store is the queue's KnownObjects, so that a relist can
	// tell which objects were deleted while the watch was down.
	cache := informer.NewIndexer(informer.MetaNamespaceKeyFunc[*corev1.Pod], nil)
	q := informer.NewDeltaFIFO(informer.DeltaFIFOOptions[*corev1.Pod]{
		KnownObjects:          cache,
		EmitDeltaTypeReplaced: true,
	})
	cache.Add(pod("default", "gone", "node-1"))
	q.Replace([]*corev1.Pod{pod("default", "kept", "node-1")}, "42")

	for q.Len() > 0 {
		q.Pop(func(deltas informer.Deltas[*corev1.Pod], initial bool) error {
			for _, d := range deltas {
				if d.Tombstone != nil {
					fmt.Println(d.Type, d.Tombstone.Key, "(deleted while unobserved)")
					cache.Delete(d.Object)
					continue
				}
				fmt.Println(d.Type, d.Object.Name, "initial:", initial)
				cache.Update(d.Object)
			}
			return nil
		})
	}
	fmt.Println(cache.ListKeys())
	// Output:
	// Replaced kept initial: true
	// Deleted default/gone (deleted while unobserved)
	// [default/kept]
}

func ExampleIndexer_AddLabelIndex() {
	pods := informer.NewIndexer(informer.MetaNamespaceKeyFunc[*corev1.Pod], nil)
	if err := pods.AddLabelIndex(informer.MetaLabelsFunc[*corev1.Pod]); err != nil {
		panic(err)
	}
	for i, app := range []string{"web", "web", "db"} {
		p := pod("default", fmt.Sprintf("%s-%d", app, i), "")
		p.Labels = map[string]string{"app": app, "track": []string{"stable", "canary"}[i%2]}
		pods.Add(p)
	}
	// app=web is read from the index; track!=canary is tested on its objects.
	sel, _ := labels.Parse("app=web,track!=canary")
	for key := range pods.BySelectorSeq(sel) {
		fmt.Println(key)
	}
	// Output:
	// default/web-0
}
