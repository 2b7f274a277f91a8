package clientgo_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1listers "k8s.io/client-go/listers/core/v1"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/clientgo"
)

// A generated client-go lister reading a typed cache, such as an
// informer's GetIndexer().
func ExampleIndexer() {
	pods := informer.NewIndexer(informer.MetaNamespaceKeyFunc[*corev1.Pod], informer.Indexers[*corev1.Pod]{
		informer.NamespaceIndex: informer.MetaNamespaceIndexFunc[*corev1.Pod],
	})
	_ = pods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"}})
	lister := corev1listers.NewPodLister(clientgo.Indexer(pods))
	inDefault, _ := lister.Pods("default").List(labels.Everything())
	p, _ := lister.Pods("default").Get("web-1")
	fmt.Println(len(inDefault), p.Name)
	// Output: 1 web-1
}
