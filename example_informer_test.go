package informer_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedkube/informer"
)

// staticPods is a ListerWatcher that lists fixed Pods and then watches a
// fake watcher the example drives. Real programs use an adapter such as
// informer.ListWatchFromClient[corev1.Pod](clientset.CoreV1().Pods(""), nil)
// or a Factory.
type staticPods struct {
	pods []*corev1.Pod
	w    *watch.FakeWatcher
}

func (s staticPods) List(context.Context, metav1.ListOptions) (*informer.ListPage[*corev1.Pod], error) {
	return &informer.ListPage[*corev1.Pod]{Items: s.pods, ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
}

func (s staticPods) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return s.w, nil
}

func ExampleSharedIndexInformer() {
	lw := staticPods{
		pods: []*corev1.Pod{pod("default", "web-1", "node-a"), pod("default", "web-2", "node-b")},
		w:    watch.NewFakeWithChanSize(1, false),
	}
	inf, err := informer.NewSharedIndexInformer(lw, informer.SharedIndexInformerOptions[*corev1.Pod]{
		Reflector: informer.ReflectorOptions{WatchList: informer.WatchListOff},
	})
	if err != nil {
		panic(err)
	}
	done := make(chan struct{})
	reg, _ := inf.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, initial bool) {
			fmt.Println("add", p.Name, "on", p.Spec.NodeName, "initial:", initial)
		},
		DeleteFunc: func(d informer.DeletedObject[*corev1.Pod]) {
			fmt.Println("delete", d.Key)
			close(done)
		},
	})

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- inf.Run(ctx) }()
	if err := informer.WaitForCacheSync(ctx, inf, reg); err != nil {
		panic(err)
	}
	onB, _ := inf.Lister().ByNamespace("default").List(labels.Everything())
	fmt.Println("cached:", len(onB))

	lw.w.Delete(pod("default", "web-2", "node-b"))
	<-done
	cancel()
	fmt.Println("Run returned", <-stopped)
	// Output:
	// add web-1 on node-a initial: true
	// add web-2 on node-b initial: true
	// cached: 2
	// delete default/web-2
	// Run returned <nil>
}
