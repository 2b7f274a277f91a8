package wire

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedkube/informer/internal/testobj"
)

// Siblings' equal parts are found in the memo from their second meeting
// on, and a sibling whose part differs, in a byte that makes it malformed,
// is refused as Protobuf refuses it.
func TestValidateMemoFindsSiblingsParts(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	pods := testobj.RealisticPods("shop", 60, 3)
	for _, p := range pods {
		if err := d.Validate(marshalPod(t, p)); err != nil {
			t.Fatal(err)
		}
	}
	if d.memo == nil || d.memo.hits == 0 {
		t.Fatal("sixty Pods of three ReplicaSets: the memo found none of their parts")
	}
	hits := d.memo.hits

	bad := pods[7].DeepCopy()
	bad.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("9")
	good := marshalPod(t, bad)
	i := strings.Index(string(good), "\x0a\x019")
	if i < 0 {
		t.Fatal(`no quantity "9" in the Pod's bytes`)
	}
	for range 3 { // met again: a malformed part is never kept
		mut := append([]byte(nil), good...)
		mut[i+2] = '!'
		_, want := d.Protobuf(mut)
		got := d.Validate(mut)
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Fatalf("a container with a quantity of \"!\": Protobuf returns %v, Validate %v", want, got)
		}
	}
	if err := d.Validate(marshalPod(t, pods[8])); err != nil {
		t.Fatal(err)
	}
	if d.memo.hits == hits {
		t.Error("a sibling after the malformed Pod: the memo found none of its parts")
	}
}

// An entry of the memo is found by its bytes and its plan or op, not by
// its hash alone.
func TestValidateMemoComparesBytes(t *testing.T) {
	m := newValidMemo()
	x, y := &plan{}, &plan{}
	a := []byte(strings.Repeat("a", memoMin))
	b := []byte(strings.Repeat("b", memoMin))
	for range 2 {
		h, ok := m.valid(a, x)
		if ok {
			t.Fatal("found before it was kept")
		}
		m.remember(h, a, x)
	}
	if _, ok := m.valid(a, x); !ok {
		t.Fatal("not found at its third meeting")
	}
	if _, ok := m.valid(a, y); ok {
		t.Error("found under another plan")
	}
	// Plant a's entry where b's hash leads, under b's hash.
	hb, _ := m.valid(b, x)
	m.slots[hb&(memoSlots-1)] = validSlot{h: hb, plan: x, b: string(a)}
	if _, ok := m.valid(b, x); ok {
		t.Error("found by its hash, with another value's bytes")
	}

	o, p := &op{}, &op{}
	q := []byte("100m")
	h, _ := m.validShort(q, o)
	m.rememberShort(h, q, o)
	if _, ok := m.validShort(q, o); !ok {
		t.Fatal("a short value kept is not found")
	}
	if _, ok := m.validShort(q, p); ok {
		t.Error("a short value found under another op")
	}
	r := []byte("200m")
	hr, _ := m.validShort(r, o)
	planted := &m.short[hr&(shortSlots-1)]
	planted.o, planted.n = o, copy(planted.b[:], q)
	if _, ok := m.validShort(r, o); ok {
		t.Error("a short value found by its hash, with another value's bytes")
	}
}

// EndList lets go of the memo, and a later list validates as well.
func TestCompactEndListDropsMemo(t *testing.T) {
	d, c := newPodCompact(t)
	pods := testobj.RealisticPods("shop", 20, 2)
	for _, p := range pods {
		if _, err := c.Protobuf(marshalPod(t, p)); err != nil {
			t.Fatal(err)
		}
	}
	if d.memo == nil || d.memo.bytes == 0 {
		t.Fatal("twenty Pods of two ReplicaSets: the memo keeps nothing")
	}
	c.EndList()
	if d.memo != nil {
		t.Fatal("the memo is kept past EndList")
	}
	for _, p := range pods {
		if _, err := c.Protobuf(marshalPod(t, p)); err != nil {
			t.Fatal(err)
		}
	}
}

// A message of few fields for its bytes, a managedFields entry around a
// large FieldsV1, is walked, not looked up: the memo keeps no copy of it,
// while it finds the containers the same Pods share.
func TestValidateMemoSkipsSparseMessages(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		p := benchPod(i)
		p.ManagedFields[0].FieldsV1 = metav1.NewFieldsV1(`{"f:spec":{` + strings.Repeat(`"f:x":{},`, 500) + `"f:y":{}}}`)
		if err := d.Validate(marshalPod(t, p)); err != nil {
			t.Fatal(err)
		}
	}
	if d.memo.hits == 0 {
		t.Fatal("thirty Pods alike: the memo found none of their parts")
	}
	for _, s := range d.memo.slots {
		if len(s.b) > 4000 {
			t.Errorf("the memo keeps a message of %d bytes: the managedFields entry", len(s.b))
		}
	}
}

// A plan whose lookups rarely find their message is looked up one message
// in memoProbeEvery after its warm-up, and again at every message once
// its lookups find.
func TestValidateMemoPlanCost(t *testing.T) {
	c := &planCost{}
	if c.worthLooking() {
		t.Fatal("a plan never walked is looked up")
	}
	walk := func() { c.bytes, c.fields, c.walks = c.bytes+200, c.fields+20, c.walks+1 }
	walk()
	looked := 0
	for range 200 {
		if c.worthLooking() {
			looked++
			c.looked(false)
		}
		walk()
	}
	if max := memoWarmUp + 200/memoProbeEvery + 1; looked > max || looked < memoWarmUp {
		t.Errorf("200 messages none of whose lookups find: %d looked up, want %d to %d", looked, memoWarmUp, max)
	}
	for range 64 { // the messages start to repeat
		for !c.worthLooking() {
			walk()
		}
		c.looked(true)
	}
	for range 10 {
		if !c.worthLooking() {
			t.Fatal("a plan whose lookups find is not looked up at every message")
		}
		c.looked(true)
	}
	sparse := &planCost{bytes: 5000, fields: 6, walks: 1}
	if sparse.worthLooking() {
		t.Error("a plan of 5,000 bytes in 6 fields is looked up")
	}
}

// The memo's copies stay within memoBudget, as the allocator rounds them,
// however many messages come again.
func TestValidateMemoBounded(t *testing.T) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 3000
	if testing.Short() {
		n = 1000
	}
	emptied, last := false, 0
	for i := range n {
		// A container of its own (--id=i), of about 1.5 KB, dense in
		// fields, kept at its second check.
		p := benchPod(i)
		for j := range 60 {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: fmt.Sprintf("VAR_%d", j), Value: "on"})
		}
		b := marshalPod(t, p)
		for range 5 { // found at the third to fifth: the memo keeps looking its plan up
			if err := d.Validate(b); err != nil {
				t.Fatal(err)
			}
		}
		held := 0
		for _, s := range d.memo.slots {
			held += allocBytes(len(s.b))
		}
		if held != d.memo.bytes || held > memoBudget {
			t.Fatalf("after %d Pods: the slots hold %d bytes, the memo counts %d, its budget is %d", i+1, held, d.memo.bytes, memoBudget)
		}
		emptied = emptied || d.memo.bytes < last
		last = d.memo.bytes
	}
	if !emptied {
		t.Fatalf("the memo never reached its budget (%d bytes, %d finds): the case shows nothing", d.memo.bytes, d.memo.hits)
	}
}
