package informers

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/typedkube/informer"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestReadYourWrites runs a controller that gives each parent ConfigMap one child ConfigMap,
// named by the server (generateName), creating it when its cache shows none, and that
// reconciles every parent twice in a row, as a requeue does. Without read-your-writes the second
// reconcile often reads a cache that lacks the child it just created, and creates another; with
// it (Lister.AtLeast the resourceVersion of its last create) it creates none. The test counts
// the children on the server after each run, and logs the duplicates made without waiting and
// what waiting cost.
func TestReadYourWrites(t *testing.T) {
	verifyNoGoroutinesLeft(t)
	ctx := testContext(t, 3*time.Minute)
	c := adminClients(t)
	ns := newNamespace(t, c)
	const parents = 300

	f := newFactory(t, c.Config, ns, informer.FactoryOptions{})
	cms, err := informer.For[*corev1.ConfigMap](f)
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx)
	defer f.Shutdown()
	if _, err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}

	run := func(round string, wait bool) (duplicates int, waits []time.Duration) {
		var lastRV string
		reconcile := func(parent string) {
			lister := cms.Lister()
			if wait && lastRV != "" {
				start := time.Now()
				l, err := lister.AtLeast(ctx, lastRV)
				if err != nil {
					t.Fatal(err)
				}
				waits = append(waits, time.Since(start))
				lister = l
			}
			sel := labels.SelectorFromSet(labels.Set{"round": round, "parent": parent})
			children, err := lister.ByNamespace(ns).List(sel)
			if err != nil {
				t.Fatal(err)
			}
			if len(children) > 0 {
				return
			}
			child, err := c.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				GenerateName: parent + "-child-",
				Labels:       map[string]string{"round": round, "parent": parent},
			}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			lastRV = child.ResourceVersion
		}
		for i := range parents {
			parent := fmt.Sprintf("p%03d", i)
			reconcile(parent)
			reconcile(parent) // requeued at once
		}
		list, err := c.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "round=" + round})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items) - parents, waits
	}

	without, _ := run("without", false)
	with, waits := run("with", true)
	slices.Sort(waits)
	p := func(q int) time.Duration { return waits[len(waits)*q/100].Round(time.Microsecond) }
	t.Logf("%d parents reconciled twice each: %d duplicate children without read-your-writes, %d with it; the wait took p50 %v, p99 %v, max %v",
		parents, without, with, p(50), p(99), waits[len(waits)-1].Round(time.Microsecond))
	if with != 0 {
		t.Errorf("with read-your-writes: %d duplicate children, want 0", with)
	}
}
