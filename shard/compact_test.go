package shard

import (
	"fmt"
	"testing"

	"github.com/typedkube/informer"
	"github.com/typedkube/informer/informertest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestShardedCompact: sharded informers with a compact store split the
// objects, and after a member joins while objects change, each caches
// exactly the source's objects of its buckets at their latest versions,
// held by no other replica's handler, its cache still compact.
func TestShardedCompact(t *testing.T) {
	var objs []*corev1.ConfigMap
	for i := range 200 {
		objs = append(objs, configMap(i))
	}
	src := informertest.NewSource(objs...)
	leases := fake.NewClientset()
	l := newLog()
	compact := informer.SharedIndexInformerOptions[*corev1.ConfigMap]{Compact: true}
	start := func(name string) *replica {
		return runReplica(t, newTestMember(t, leases, name, KeyUID), src, l, name, compact)
	}
	rs := []*replica{start("a"), start("b")}
	waitConverged(t, rs, src)
	checkOwners(t, l, rs, src)

	rs = append(rs, start("c"))
	for i := range 50 {
		u := configMap(i)
		u.Data = map[string]string{"n": fmt.Sprint(i)}
		if _, err := src.Update(u); err != nil {
			t.Fatal(err)
		}
		if _, err := src.Add(configMap(200 + i)); err != nil {
			t.Fatal(err)
		}
	}
	waitConverged(t, rs, src)
	checkOwners(t, l, rs, src)
	for _, r := range rs {
		if ok, bytes := r.inf.Informer().GetIndexer().Compact(); !ok || bytes == 0 {
			t.Errorf("%s: Compact() = %v, %d", r.name, ok, bytes)
		}
	}
	l.mu.Lock()
	fails := l.fails
	l.mu.Unlock()
	if len(fails) > 0 {
		t.Errorf("%d calls overlapped across replicas, such as %v", len(fails), fails[:min(5, len(fails))])
	}
}
