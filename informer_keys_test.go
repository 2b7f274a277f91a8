package informer

import (
	"errors"
	"slices"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedkube/informer/internal/testobj"
)

// keyedIndexer returns an Indexer of Pods, compact or not, whose writers may
// leave keys to it, as the informer's does.
func keyedIndexer(t *testing.T, compact bool) *Indexer[*corev1.Pod] {
	var x *Indexer[*corev1.Pod]
	if compact {
		x, _ = newCompactIndexer(t, Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]}, 0)
	} else {
		x = NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]})
	}
	x.appendKey = appendObjectKey[*corev1.Pod]
	return x
}

// TestStoreKeepsItsKey: a write that leaves the key to the Store stores a
// new object under the key MetaNamespaceKeyFunc makes, and a new version of
// a cached object under the very string it already keeps, without making
// one: no allocation, and the same bytes.
func TestStoreKeepsItsKey(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(map[bool]string{false: "store=decoded", true: "store=compact"}[compact], func(t *testing.T) {
			x := keyedIndexer(t, compact)
			for _, tc := range []struct {
				pod  *corev1.Pod
				want string
			}{
				{testobj.Pod("ns", "a", "1"), "ns/a"},
				{testobj.Pod("other", "a", "2"), "other/a"},
				{testobj.Pod("", "cluster-scoped", "3"), "cluster-scoped"},
			} {
				firstE, _, existed, err := x.upsertVersion("", tc.pod, 0, false)
				first := firstE.key
				if err != nil || existed || first != tc.want {
					t.Fatalf("upsertVersion(%q) of a new object = %q, existed %v, %v; want %q, false, nil", "", first, existed, err, tc.want)
				}
				if got, ok := x.GetByKey(tc.want); !ok || got.ResourceVersion != tc.pod.ResourceVersion {
					t.Fatalf("GetByKey(%q) = %v, %v; want the object stored", tc.want, got, ok)
				}
				next := tc.pod.DeepCopy()
				next.ResourceVersion += "0"
				secondE, old, existed, err := x.upsertVersion("", next, 0, false)
				second := secondE.key
				if err != nil || !existed || second != tc.want {
					t.Fatalf("upsertVersion(%q) of a new version = %q, existed %v, %v; want %q, true, nil", "", second, existed, err, tc.want)
				}
				if unsafe.StringData(second) != unsafe.StringData(first) {
					t.Errorf("the key of a new version of %s is a new string, not the one the store keeps", tc.want)
				}
				if prev, ok := x.objectOf(old); !ok || prev.ResourceVersion != tc.pod.ResourceVersion {
					t.Errorf("the entry replaced under %s is %v, %v; want version %s", tc.want, prev, ok, tc.pod.ResourceVersion)
				}
				x.forget(old)
				allocs := testing.AllocsPerRun(100, func() {
					x.writeMu.Lock()
					_ = x.keyLocked("", next)
					x.writeMu.Unlock()
				})
				if allocs != 0 {
					t.Errorf("finding the key of cached %s allocated %v times; want 0", tc.want, allocs)
				}
			}
			// A key given is kept as it is.
			if k, _, _, err := x.upsertVersion("given", testobj.Pod("ns", "b", "4"), 0, false); err != nil || k.key != "given" {
				t.Errorf("upsertVersion(%q) = %q, %v; want the key given", "given", k.key, err)
			}
			if got := x.ListKeys(); len(got) != 4 {
				t.Errorf("ListKeys() = %q; want 4 keys", got)
			}
		})
	}
}

// TestEventQueueLeavesKeysToStore: a queue with checkKey queues an add or
// an update without its key, and a delete with it; it refuses what
// MetaNamespaceKeyFunc refuses with keyOf's errors; a failing transform's
// error names the key all the same.
func TestEventQueueLeavesKeysToStore(t *testing.T) {
	failing := errors.New("no")
	q := newEventQueue(MetaNamespaceKeyFunc[*corev1.Pod], func(p *corev1.Pod) (*corev1.Pod, error) {
		if p.Labels["fail"] != "" {
			return nil, failing
		}
		return p, nil
	})
	q.checkKey = checkMetaKey[*corev1.Pod]
	for _, change := range []func(*corev1.Pod) error{q.Add, q.Update, q.addReplayed} {
		if err := change(testobj.Pod("ns", "a", "1")); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Delete(testobj.Pod("ns", "a", "1")); err != nil {
		t.Fatal(err)
	}
	batch, _, _ := q.pop(nil, 16)
	var keys []string
	for _, e := range batch {
		keys = append(keys, e.key)
	}
	if want := []string{"", "", "", "ns/a"}; !slices.Equal(keys, want) {
		t.Errorf("the keys queued for add, update, replayed add and delete are %q; want %q", keys, want)
	}

	var ke *KeyError[*corev1.Pod]
	if err := q.Update(nil); !errors.Is(err, ErrNilObject) || !errors.As(err, &ke) {
		t.Errorf("Update(nil) = %v; want a *KeyError wrapping ErrNilObject", err)
	}
	if err := q.Add(testobj.Pod("ns", "", "1")); !errors.Is(err, ErrEmptyKey) || !errors.As(err, &ke) {
		t.Errorf("Add of an object without a name = %v; want a *KeyError wrapping ErrEmptyKey", err)
	}
	bad := testobj.Pod("ns", "b", "1", "fail=yes")
	var te *TransformError
	if err := q.Update(bad); !errors.Is(err, failing) || !errors.As(err, &te) || te.Key != "ns/b" {
		t.Errorf("Update of an object the transform fails on = %v; want a *TransformError of key ns/b wrapping the transform's error", err)
	}
	if q.Len() != 0 {
		t.Errorf("%d events queued after refused changes; want none", q.Len())
	}
}
