package testobj

import (
	"encoding/json"
	"testing"
)

func TestBenchPodSize(t *testing.T) {
	b, err := json.Marshal(BenchPod(12345, 100))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(b); n < 1300 || n > 1800 {
		t.Errorf("BenchPod is %d bytes of JSON, want about 1.5 KB", n)
	}
}

// Realistic Pods are about 10 KB of protobuf, about half of it
// managedFields; the Pods of one ReplicaSet have the same FieldsV1 for the
// controller's create, another ReplicaSet's differ, and the kubelet's are
// each Pod's own.
func TestRealisticPods(t *testing.T) {
	pods := RealisticPods("shop", 60, 20)
	for _, p := range pods[:3] {
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var mf int
		for _, m := range p.ManagedFields {
			mf += len(m.FieldsV1.GetRawBytes())
		}
		if n := len(b); n < 9000 || n > 13000 || mf < n*2/5 {
			t.Errorf("pod %s: %d bytes of protobuf, %d of FieldsV1; want about 10 KB, about half of it FieldsV1", p.Name, n, mf)
		}
	}
	raw := func(i, entry int) string { return pods[i].ManagedFields[entry].FieldsV1.GetRawString() }
	if raw(0, 0) != raw(20, 0) || raw(0, 0) != raw(40, 0) {
		t.Error("the Pods of one ReplicaSet have different FieldsV1 for the create")
	}
	if raw(0, 0) == raw(1, 0) {
		t.Error("the Pods of two ReplicaSets have the same FieldsV1 for the create")
	}
	if raw(0, 1) == raw(20, 1) {
		t.Error("two Pods have the same FieldsV1 for the kubelet's update")
	}
	if pods[0].OwnerReferences[0].Name == pods[1].OwnerReferences[0].Name {
		t.Error("two ReplicaSets have one name")
	}
	names := map[string]bool{}
	for i := range 50000 {
		p := RealisticPodCreate("shop", i, 20)
		if names[p.Name] {
			t.Fatalf("pod %d has the name of another: %s", i, p.Name)
		}
		names[p.Name] = true
	}
}
