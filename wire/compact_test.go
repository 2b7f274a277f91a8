package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func newPodCompact(t testing.TB) (*Decoder[*corev1.Pod], *Compact[*corev1.Pod]) {
	t.Helper()
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d, NewCompact(d, DecodedCacheSize)
}

// A record gives back the bytes it was made from, and decodes into the
// object they decode into; Pods share most of their bytes.
func TestCompactRoundTrip(t *testing.T) {
	d, c := newPodCompact(t)
	raw, kept := 0, 0
	for i := range 200 {
		b := marshalPod(t, benchPod(i))
		r, err := c.Protobuf(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.AppendTo(nil); !bytes.Equal(got, b) {
			t.Fatalf("Pod %d: the record gives back other bytes", i)
		}
		if r.Len() != len(b) || r.JSON() {
			t.Fatalf("Pod %d: Len %d JSON %v, want %d false", i, r.Len(), r.JSON(), len(b))
		}
		want, err := d.Protobuf(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("Pod %d decodes otherwise (-want +got):\n%s", i, diff)
		}
		raw += len(b)
		kept += r.Bytes()
	}
	// benchPod's Pods differ in a few fields: a record keeps little more
	// than those.
	if kept > raw/2 {
		t.Errorf("records hold %d bytes of %d", kept, raw)
	}
	t.Logf("%d B of protobuf a Pod, %d B a record, %d B shared once", raw/200, kept/200, c.SharedBytes())
}

// A record that fails to validate is refused with the decoder's error.
func TestCompactRefusesBadBytes(t *testing.T) {
	d, c := newPodCompact(t)
	b := marshalPod(t, benchPod(1))
	bad := b[:len(b)-3]
	_, want := d.Protobuf(bad)
	_, err := c.Protobuf(bad)
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Fatalf("Protobuf of a truncated Pod: %v, want %v", err, want)
	}
	if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrMalformed) {
		t.Errorf("%v is not a decoding error", err)
	}
}

// Encode keeps the object itself as the record's decoded object; a record
// decoded twice gives one object until the cache lets it go, then an equal
// one.
func TestCompactDecodedCache(t *testing.T) {
	d, c := newPodCompact(t)
	// As the API server sends it: its times to the second.
	p, err := d.Protobuf(marshalPod(t, benchPod(7)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	if r.cached() != unsafe.Pointer(p) {
		t.Error("Encode does not keep the encoded object")
	}
	for i := range DecodedCacheSize {
		if _, err := c.Encode(benchPod(100 + i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Cached(); n != DecodedCacheSize {
		t.Errorf("%d objects cached, want %d", n, DecodedCacheSize)
	}
	if r.cached() != nil {
		t.Fatal("the first record still holds its object after a full turn of others")
	}
	a, err := c.Decode(r)
	if err != nil {
		t.Fatal(err)
	}
	if a == p {
		t.Fatal("a decoded object is the one encoded, which the cache let go")
	}
	if diff := cmp.Diff(p, a); diff != "" {
		t.Errorf("decoded otherwise than encoded (-want +got):\n%s", diff)
	}
	if b, _ := c.Decode(r); b != a {
		t.Error("two reads of a record in the cache give two objects")
	}
	if got, _ := c.Decode(r); got != a {
		t.Error("a third read gives another object")
	}
}

// newFullCompact returns a Compact whose cache of decoded objects is full
// of the records of Pods it encoded, and those records, in order.
func newFullCompact(t *testing.T) (*Compact[*corev1.Pod], []*Record) {
	t.Helper()
	_, c := newPodCompact(t)
	var recs []*Record
	for i := range DecodedCacheSize {
		r, err := c.Encode(benchPod(i))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	return c, recs
}

// podRecords returns the records c makes of the protobuf of n Pods, as a
// LIST's items become records, never decoded.
func podRecords(tb testing.TB, c *Compact[*corev1.Pod], n int) []*Record {
	tb.Helper()
	recs := make([]*Record, n)
	for i := range recs {
		r, err := c.Protobuf(marshalPod(tb, benchPod(i)))
		if err != nil {
			tb.Fatal(err)
		}
		recs[i] = r
	}
	return recs
}

// A record read since the clock hand passed stays cached; one not read
// goes first.
func TestCompactCacheKeepsHotRecords(t *testing.T) {
	c, recs := newFullCompact(t)
	hot := recs[0]
	if _, err := c.Decode(hot); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Encode(benchPod(5000)); err != nil {
		t.Fatal(err)
	}
	if hot.cached() == nil {
		t.Error("the hot record lost its object")
	}
	if recs[1].cached() != nil {
		t.Error("the record after it, not read, kept its object")
	}
}

// recordHeader is what a Record's struct costs once the allocator rounds
// it: the struct must fit.
func TestRecordHeader(t *testing.T) {
	if n := unsafe.Sizeof(Record{}); n > recordHeader {
		t.Errorf("a Record is %d bytes, more than recordHeader (%d)", n, recordHeader)
	}
}

// A record of no run, one and three gives back its encoding and its refs in
// order; with one run, its struct holds the run's pointer (one of them
// unaligned), so the record is two allocations, the struct and its bytes,
// and Bytes counts no block of pointers; with three, three allocations.
func TestRecordRuns(t *testing.T) {
	runs := []string{strings.Repeat("bc", 20)[1:], strings.Repeat("a", 5), "xyz"} // the first unaligned
	for _, n := range []int{0, 1, 3} {
		own := []byte("0123456789")
		var refs []ref
		var want []byte
		from := 0
		for i := range n {
			at := 3 * (i + 1)
			want = append(want, own[from:at]...)
			want = append(want, runs[i]...)
			refs = append(refs, ref{at: uint32(at), n: uint32(len(runs[i])), p: unsafe.StringData(runs[i])})
			from = at
		}
		want = append(want, own[from:]...)
		r := newRecord(own, refs, len(want), false)
		if got := r.AppendTo(nil); string(got) != string(want) {
			t.Errorf("%d runs: AppendTo = %q, want %q", n, got, want)
		}
		i := 0
		for rf := range r.eachRef {
			if rf != refs[i] {
				t.Errorf("%d runs: ref %d = %+v, want %+v", n, i, rf, refs[i])
			}
			i++
		}
		if i != n {
			t.Errorf("%d runs: eachRef gave %d refs", n, i)
		}
		if got, bytes := r.Shared(); got != n {
			t.Errorf("%d runs: Shared = %d, %d", n, got, bytes)
		}
		pointers, wantAllocs := allocBytes(8*n), 3.0 // the struct, its bytes, its pointers
		if n <= 1 {
			pointers, wantAllocs = 0, 2
		}
		if got, want := r.Bytes(), recordHeader+allocBytes(int(r.dataLen))+pointers; got != want {
			t.Errorf("%d runs: Bytes = %d, want %d", n, got, want)
		}
		if got := testing.AllocsPerRun(10, func() { newRecord(own, refs, len(want), false) }); got != wantAllocs {
			t.Errorf("%d runs: newRecord made %v allocations, want %v", n, got, wantAllocs)
		}
	}
}

// A record forgotten gives its place to the next one kept, which evicts
// no one; forgetting a record not in the cache changes nothing.
func TestCompactForget(t *testing.T) {
	c, recs := newFullCompact(t)
	gone := recs[3]
	c.Forget(gone)
	if gone.cached() != nil || c.Cached() != DecodedCacheSize-1 {
		t.Fatalf("after Forget: the record holds %p, %d cached; want nil, %d", gone.cached(), c.Cached(), DecodedCacheSize-1)
	}
	c.Forget(gone)
	if c.Cached() != DecodedCacheSize-1 {
		t.Fatalf("a second Forget: %d cached, want %d", c.Cached(), DecodedCacheSize-1)
	}
	if _, err := c.Encode(benchPod(5000)); err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if i != 3 && r.cached() == nil {
			t.Fatalf("record %d lost its object to a record kept after a Forget", i)
		}
	}
	// Read again, the record decodes and takes a place from the hand.
	if _, err := c.Decode(gone); err != nil {
		t.Fatal(err)
	}
	if gone.cached() == nil || c.Cached() != DecodedCacheSize {
		t.Errorf("read after Forget: cached %v, %d cached; want it cached, %d", gone.cached() != nil, c.Cached(), DecodedCacheSize)
	}
}

// Reads, Encodes and Forgets in parallel keep the cache's invariant: a
// record holds a decoded object iff it is in the ring, at its place.
func TestCompactForgetConcurrent(t *testing.T) {
	d, _ := newPodCompact(t)
	c := NewCompact(d, 16)
	recs := podRecords(t, c, 64)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				r := recs[(i*7+g*13)%len(recs)]
				switch (i + g) % 3 {
				case 0, 1:
					if _, err := c.Decode(r); err != nil {
						t.Error(err)
						return
					}
				case 2:
					c.Forget(r)
				}
			}
		})
	}
	wg.Wait()
	inRing := 0
	for i, r := range c.cache.ring {
		if r == nil {
			continue
		}
		inRing++
		if r.place != uint32(i)+1 || r.cached() == nil {
			t.Errorf("ring[%d]: place %d, cached %v", i, r.place, r.cached() != nil)
		}
	}
	holding := 0
	for _, r := range recs {
		if r.cached() != nil {
			holding++
		}
	}
	if holding != inRing || inRing > 16 {
		t.Errorf("%d records hold an object, %d are in a ring of 16", holding, inRing)
	}
}

// Concurrent reads of one record get one object, or equal ones.
func TestCompactConcurrentDecode(t *testing.T) {
	_, c := newPodCompact(t)
	r, err := c.Protobuf(marshalPod(t, benchPod(3)))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	objs := make([]*corev1.Pod, 8)
	for i := range objs {
		wg.Go(func() {
			p, err := c.Decode(r)
			if err != nil {
				t.Error(err)
			}
			objs[i] = p
		})
	}
	wg.Wait()
	for _, p := range objs[1:] {
		if p != objs[0] {
			t.Fatal("concurrent reads of one record got two objects")
		}
	}
}

// Labels reads what decoding would, and shares the map.
func TestCompactLabels(t *testing.T) {
	d, c := newPodCompact(t)
	for i := range 5 {
		b := marshalPod(t, benchPod(i))
		r, err := c.Protobuf(b)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := d.Protobuf(b)
		got, err := c.Labels(r)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.Labels, got); diff != "" {
			t.Errorf("labels of Pod %d (-want +got):\n%s", i, diff)
		}
		if ok, err := c.HasResourceVersion(r, []byte(want.ResourceVersion)); !ok || err != nil {
			t.Errorf("HasResourceVersion(%q) = %v, %v", want.ResourceVersion, ok, err)
		}
		if ok, _ := c.HasResourceVersion(r, []byte("1")); ok {
			t.Error("HasResourceVersion(\"1\") = true")
		}
	}
	none, err := c.Encode(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare"}})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := c.Labels(none); m != nil || err != nil {
		t.Errorf("labels of a Pod without any: %v, %v", m, err)
	}
}

// Objects without protobuf are kept in JSON, with their runs shared too.
func TestCompactJSON(t *testing.T) {
	d, err := NewDecoder[*unstructured.Unstructured, *unstructured.Unstructured](Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := NewCompact(d, DecodedCacheSize)
	kept, raw := 0, 0
	for i := range 50 {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(fmt.Appendf(nil, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w-%d","namespace":"ns","resourceVersion":"%d","labels":{"app":"a-%d","app.kubernetes.io/part-of":"informer-bench"},"managedFields":[{"manager":"m","operation":"Update","fieldsV1":{"f:spec":{"f:size":{},"f:color":{},"f:owner":{}}}}]},"spec":{"size":%d,"color":"a long color name that every widget has"}}`, i, 100+i, i%3, i), u); err != nil {
			t.Fatal(err)
		}
		r, err := c.Encode(u)
		if err != nil {
			t.Fatal(err)
		}
		if !r.JSON() {
			t.Fatal("an Unstructured record is not JSON")
		}
		r.obj = nil // as if the cache had let it go
		got, err := c.Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(u, got); diff != "" {
			t.Fatalf("widget %d decodes otherwise (-want +got):\n%s", i, diff)
		}
		labels, err := c.Labels(r)
		if err != nil || labels["app"] != fmt.Sprint("a-", i%3) {
			t.Fatalf("labels %v, %v", labels, err)
		}
		kept += r.Bytes()
		raw += r.Len()
		if runs, _ := r.Shared(); i > 3 && runs < 3 {
			t.Errorf("widget %d shares %d runs, want its labels, managedFields and color", i, runs)
		}
	}
	if kept > raw*85/100 {
		t.Errorf("JSON records hold %d bytes of %d", kept, raw)
	}
}

// TestSharedRunsValuesInOneSet meets four values whose hashes fall in one
// set of the table of values met once, in turn, as fields of every object
// come: each is met again at its second coming, and none pushes another
// out.
func TestSharedRunsValuesInOneSet(t *testing.T) {
	runs := newSharedRuns()
	setOf := func(v []byte) *onceSet { return runs.seenSet(runs.hash(v)) }
	vals := [][]byte{fmt.Appendf(nil, "%0*d", minRun, 0)}
	for i := 1; len(vals) < 4; i++ {
		if v := fmt.Appendf(nil, "%0*d", minRun, i); setOf(v) == setOf(vals[0]) {
			vals = append(vals, v)
		}
	}
	for round, want := range []meeting{metFirst, metAgain} {
		for _, v := range vals {
			if _, m, _ := runs.share(v, runs.hash(v), setOf(v)); m != want {
				t.Errorf("round %d: %s met as %d, want %d", round, v, m, want)
			}
		}
	}
}

// FuzzCompactSplit makes records of arbitrary bytes, as protobuf and as
// JSON, two in turn through one table: each gives back its bytes, and its
// own bytes and the runs it shares add up to them.
func FuzzCompactSplit(f *testing.F) {
	f.Add(marshalPod(f, benchPod(1)), marshalPod(f, benchPod(2)))
	f.Add([]byte(`{"a":{"b":"0123456789012345678901234567890123456789"},"c":[1,2,{"d":"0123456789012345678901234567890123456789"}]}`),
		[]byte(`{"c":[1,2,{"d":"0123456789012345678901234567890123456789"}],"e":"\"}"}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		runs := newSharedRuns()
		s := splitter{runs: &runs}
		// record cuts src beside old, checks the record and returns it.
		record := func(src []byte, json bool, old *Record) *Record {
			r := s.record(src, json, old)
			if got := r.AppendTo(nil); !bytes.Equal(got, src) {
				t.Fatalf("json=%v, beside another=%v: record of %q gives back %q", json, old != nil, src, got)
			}
			if _, shared := r.Shared(); r.Len() != len(src) || len(r.own())+shared != len(src) {
				t.Fatalf("json=%v, beside another=%v: record of %d bytes: Len %d, %d own and %d shared", json, old != nil, len(src), r.Len(), len(r.own()), shared)
			}
			return r
		}
		for _, json := range []bool{false, true} {
			for _, src := range [][]byte{a, b, a} {
				record(src, json, nil)
			}
		}
		// Each encoding cut beside the record of the other, and of itself.
		var old *Record
		for _, src := range [][]byte{a, b, b, a} {
			old = record(src, false, old)
		}
	})
}

// BenchmarkCompactDecode decodes records not in the cache: op=decode is the
// decoder alone, from the record's bytes put back together; op=miss is
// Compact.Decode of a record whose object the cache let go.
func BenchmarkCompactDecode(b *testing.B) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		b.Fatal(err)
	}
	c := NewCompact(d, 1)
	recs := podRecords(b, c, 1000)
	b.Run("op=decode", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		i := 0
		for b.Loop() {
			buf = recs[i%len(recs)].AppendTo(buf[:0])
			if _, err := d.Protobuf(buf); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("op=miss", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := c.Decode(recs[i%len(recs)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// Once the table of shared runs has started over, the records made before
// still point at the runs it dropped: SharedBytesOf counts them, each once,
// with the runs the table holds, and the count matches the heap the
// records hold.
func TestCompactSharedBytesAfterReset(t *testing.T) {
	_, c := newPodCompact(t)
	c.runs.maxRuns = 64 // so that 600 realistic Pods make the table start over
	pods := testobj.RealisticPods("shop", 600, 40)
	encs := make([][]byte, len(pods))
	for i, p := range pods {
		encs[i] = marshalPod(t, p)
	}
	pods = nil
	before := liveHeap()
	recs := make([]*Record, len(encs))
	for i, b := range encs {
		r, err := c.Protobuf(b)
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = r
	}
	if c.runs.resets == 0 {
		t.Fatal("the table never started over: the test checks nothing")
	}
	all := func(yield func(*Record) bool) {
		for _, r := range recs {
			if !yield(r) {
				return
			}
		}
	}

	// Every distinct run, of the table and of the records.
	distinct := make(map[*byte]int)
	for _, s := range c.runs.runs {
		distinct[unsafe.StringData(s)] = allocBytes(len(s))
	}
	for _, r := range recs {
		for rf := range r.eachRef {
			distinct[rf.p] = allocBytes(int(rf.n))
		}
	}
	want := 0
	for _, n := range distinct {
		want += n
	}
	got := c.SharedBytesOf(all)
	if got != want {
		t.Errorf("SharedBytesOf = %d, want %d, the distinct runs' bytes", got, want)
	}
	if table := c.SharedBytes(); table >= want {
		t.Errorf("SharedBytes = %d, want less than %d: the table dropped runs", table, want)
	}

	own := 0
	for _, r := range recs {
		own += r.Bytes()
	}
	told := own + got + allocBytes(8*len(recs))
	held := liveHeap() - before
	runtime.KeepAlive(recs)
	runtime.KeepAlive(encs) // the records copy what they keep: encs is not part of held
	ratio := float64(told) / float64(held)
	t.Logf("%d resets; held %d B, told %d B (%.3f): own %d, shared %d (table %d)", c.runs.resets, held, told, ratio, own, got, c.SharedBytes())
	if tol := heapTolerance(); ratio < 1-tol || ratio > 1+tol {
		t.Errorf("records and runs told %d B, %.1f%% of the %d B held: want within %.0f%%", told, 100*ratio, held, 100*tol)
	}
}

// Until the table starts over, SharedBytesOf is SharedBytes and does not
// walk the records.
func TestCompactSharedBytesNoWalk(t *testing.T) {
	_, c := newPodCompact(t)
	recs := podRecords(t, c, 200)
	walked := false
	got := c.SharedBytesOf(func(yield func(*Record) bool) {
		walked = true
		for _, r := range recs {
			if !yield(r) {
				return
			}
		}
	})
	if walked {
		t.Error("SharedBytesOf walked the records before any reset")
	}
	if want := c.SharedBytes(); got != want || got == 0 {
		t.Errorf("SharedBytesOf = %d, want SharedBytes %d (> 0)", got, want)
	}
}

// Realistic Pods made 100 and 200 a second, as a ReplicaSet's Pods come
// from the API server: the managedFields entries of one ReplicaSet's Pods
// of one second are equal (5 and 10 Pods here), each holding the FieldsV1
// all its Pods share. The split shares FieldsV1 and does not copy it into
// a run for each such entry (making every entry met again a run held 3.8
// KB a Pod, runs 1.4 KB, at 100 a second); nor when an entry is met more
// often than promoteAfter times, unless its meetings would have paid for
// the copy: copying each entry at its eighth meeting, for the two Pods
// left to share it (until 2026-12-02), held 2,467 B a Pod at 200 a second
// (runs 887 B; 1,935-1,949 B and runs 323-334 B since).
func TestCompactEntriesOfOneSecond(t *testing.T) {
	n := 2000
	if raceEnabled {
		n = 1000 // the split is slow under the race detector
	}
	for _, perSecond := range []int{100, 200} {
		t.Run(fmt.Sprintf("per-second=%d", perSecond), func(t *testing.T) {
			pods := testobj.RealisticPods("shop", n, 20)
			epoch := time.Date(2026, 11, 2, 9, 30, 0, 0, time.UTC)
			for i, p := range pods {
				at := metav1.NewTime(epoch.Add(time.Duration(i/perSecond) * time.Second))
				for j := range p.ManagedFields {
					p.ManagedFields[j].Time = &at
				}
			}
			_, c := newPodCompact(t)
			recs := make([]*Record, n)
			own := 0
			for i, p := range pods {
				b := marshalPod(t, p)
				r, err := c.Protobuf(b)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(r.AppendTo(nil), b) {
					t.Fatalf("Pod %d: the record gives back other bytes", i)
				}
				recs[i] = r
				own += r.Bytes()
			}
			shared := c.SharedBytesOf(slices.Values(recs))
			perPod := (own + shared) / n
			t.Logf("%d B a Pod: own %d, shared %d (%d runs)", perPod, own/n, shared/n, len(c.runs.runs))
			limit := 2150
			if raceEnabled {
				limit = 2600 // fewer Pods to spread the runs all share over
			}
			if perPod > limit {
				t.Errorf("records and runs hold %d B a Pod, want at most %d", perPod, limit)
			}
		})
	}
}

// BenchmarkSharedBytesOf is what Store.Compact, and so Stats, pays for a
// compact store of 100,000 realistic Pods (testobj.RealisticPods, 50
// namespaces of 2,000 Pods of 20 ReplicaSets, their managedFields
// written 100 a second as the e2e benchmarks' API server writes them)
// once the table of shared runs has started over: a walk of every
// record's refs, a map lookup each. Store.Compact walks under the Store's
// read lock, so the store's writers wait for it. It reports the table's
// restarts and the refs walked per op. These Pods share more than the API
// server's (451 runs, 612 KB, for all of them), so the table's bound is
// lowered to make it start over, as it does at 10,000 Pods in the e2e
// benchmarks: the walk visits every ref either way.
func BenchmarkSharedBytesOf(b *testing.B) {
	_, c := newPodCompact(b)
	c.runs.maxRuns = 400
	var recs []*Record
	refs := 0
	epoch := time.Date(2026, 11, 2, 9, 30, 0, 0, time.UTC)
	for ns := range 50 {
		for i, p := range testobj.RealisticPods(fmt.Sprintf("ns-%d", ns), 2000, 20) {
			at := metav1.NewTime(epoch.Add(time.Duration(ns*2000+i) / 100 * time.Second))
			for j := range p.ManagedFields {
				p.ManagedFields[j].Time = &at
			}
			r, err := c.Protobuf(marshalPod(b, p))
			if err != nil {
				b.Fatal(err)
			}
			recs = append(recs, r)
			n, _ := r.Shared()
			refs += n
		}
	}
	if c.runs.resets == 0 {
		b.Fatalf("the table never started over (%d runs, %d B): the walk is not measured", len(c.runs.runs), c.runs.bytes)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n += c.SharedBytesOf(slices.Values(recs))
	}
	b.ReportMetric(float64(c.runs.resets), "resets")
	b.ReportMetric(float64(refs), "refs/op")
	b.ReportMetric(float64(n)/float64(b.N)/float64(len(recs)), "shared-B/object")
}

// A protobuf record made by Encode gives its objects the TypeMeta the
// encoded object had, once the decoded object has left the cache, as the
// encoding cannot carry it: a metadata informer's objects keep the kind
// their transform set. A record of the server's bytes has none.
func TestCompactKeepsKind(t *testing.T) {
	d, err := NewDecoder[*metav1.PartialObjectMetadata, *metav1.PartialObjectMetadata](Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := NewCompact(d, 0)
	kinds := []metav1.TypeMeta{{APIVersion: "apps/v1", Kind: "Deployment"}, {APIVersion: "v1", Kind: "Pod"}, {}}
	var recs []*Record
	var want []*metav1.PartialObjectMetadata
	for i := range 30 {
		m := &metav1.PartialObjectMetadata{TypeMeta: kinds[i%3], ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("m", i), ResourceVersion: "1"}}
		r, err := c.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		c.Forget(r) // the decoded object leaves the cache
		recs, want = append(recs, r), append(want, m)
	}
	for i, r := range recs {
		got, err := c.Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[i], got); diff != "" {
			t.Errorf("object %d (-want +got):\n%s", i, diff)
		}
	}
	if n := len(*c.kinds.Load()); n != 2 {
		t.Errorf("%d kinds kept, want 2", n)
	}
	b, err := want[0].Marshal()
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Protobuf(b)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Decode(r); err != nil || got.Kind != "" || got.APIVersion != "" {
		t.Errorf("a record of the server's bytes decodes to %v, %v; want no TypeMeta", got.TypeMeta, err)
	}
}

// BenchmarkCompactRecord makes the records of listed Pods, as a compact
// store's initial list does (Compact.Protobuf: validate, then split): 4,000
// Pods of 40 ReplicaSets, realistic or harsh (testobj.HarshPods: each
// Pod's managedFields differ from its siblings' in a few bytes), in turn.
// B/record is what a record holds on its own (Record.Bytes), and
// shared-B/record the table's runs per record.
func BenchmarkCompactRecord(b *testing.B) {
	for _, w := range []struct {
		name string
		pods func(string, int, int) []*corev1.Pod
	}{{"realistic", testobj.RealisticPods}, {"owntoken", testobj.OwnTokenPods}, {"harsh", testobj.HarshPods}} {
		b.Run("pods="+w.name, func(b *testing.B) {
			pods := w.pods("shop", 4000, 40)
			encs := make([][]byte, len(pods))
			for i, p := range pods {
				encs[i] = marshalPod(b, p)
			}
			_, c := newPodCompact(b)
			b.ReportAllocs()
			held, i := 0, 0
			for b.Loop() {
				r, err := c.Protobuf(encs[i%len(encs)])
				if err != nil {
					b.Fatal(err)
				}
				if i < len(encs) {
					held += r.Bytes()
				}
				i++
			}
			n := min(i, len(encs))
			b.ReportMetric(float64(held)/float64(n), "B/record")
			b.ReportMetric(float64(c.SharedBytes())/float64(n), "shared-B/record")
		})
	}
}

// Records of Pods whose managedFields differ from their siblings' in a
// few bytes (a generated volume name in the create's entry, the Pod's IP
// in the kubelet's) share the rest of those entries: the split looks into
// the JSON of a FieldsV1 and shares the gaps between shared values. Pods
// whose token volume is named for each (as a cluster's admission names
// it: the volume and a mount in each container differ) share the fields
// around the mounts (spans). What a record holds on its own, on average
// over the last 3,000 of 4,000 Pods of 40 ReplicaSets (measured on
// 2026-12-06: realistic 1,570 B, own token volumes 1,750 B, harsh 2,200
// B, harsh without managedFields 1,540 B; before spans, 1,550, 2,145,
// 2,165 and 1,547 B; under the race detector, over 750 of 1,000 Pods, up
// to 8% more).
func TestCompactSharesNearIdenticalValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		pods func(string, int, int) []*corev1.Pod
		opts Options
		max  int
	}{
		{"realistic", testobj.RealisticPods, Options{}, 2050},
		{"own token volumes", testobj.OwnTokenPods, Options{}, 1950},
		{"harsh", testobj.HarshPods, Options{}, 3000},
		{"harsh without managedFields", testobj.HarshPods, Options{DropManagedFields: true}, 2100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDecoder[*corev1.Pod, *corev1.Pod](tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			c := NewCompact(d, 0)
			n := 4000
			if raceEnabled {
				n = 1000 // a fifth of the time: the split is slow under the race detector
			}
			// The records after the first quarter: the first Pods of each
			// ReplicaSet share little yet.
			held, counted := 0, 0
			for i, p := range tc.pods("shop", n, 40) {
				r, err := c.Protobuf(marshalPod(t, p))
				if err != nil {
					t.Fatal(err)
				}
				if i >= n/4 {
					held += r.Bytes()
					counted++
				}
			}
			t.Logf("%d B a record, %d B of shared runs a Pod", held/counted, c.SharedBytes()/n)
			if held/counted > tc.max {
				t.Errorf("a record holds %d B on average, want at most %d", held/counted, tc.max)
			}
		})
	}
}

// uvarintLen gives the length binary.AppendUvarint writes, which a
// record's block is sized by.
func TestUvarintLen(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 16383, 16384, 1<<21 - 1, 1 << 21, 1<<32 - 1, 1<<63 - 1, 1<<64 - 1} {
		if got, want := uvarintLen(v), len(binary.AppendUvarint(nil, v)); got != want {
			t.Errorf("uvarintLen(%d) = %d, want %d", v, got, want)
		}
	}
}

// FuzzWalkTag holds walkTag to tag: where it reads a key, tag reads the
// same, and it refuses every key tag refuses, and groups' keys, without
// allocating.
func FuzzWalkTag(f *testing.F) {
	for _, b := range [][]byte{{0x0a}, {0x08}, {0x0b}, {0x0c}, {0x0e}, {0x0f}, {0x02}, {0x80, 0x01}, {0x8b, 0x01}, {0x83, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, {}} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		num, typ, next, ok := walkTag(b, 0)
		tnum, ttyp, tnext, err := tag(b, 0)
		switch {
		case ok && (err != nil || num != tnum || typ != ttyp || next != tnext):
			t.Errorf("walkTag(%x) = %d, %d, %d; tag = %d, %d, %d, %v", b, num, typ, next, tnum, ttyp, tnext, err)
		case !ok && err == nil && ttyp <= wireFixed32 && ttyp != wireStart:
			t.Errorf("walkTag(%x) refused the key %d, %d tag reads", b, tnum, ttyp)
		case ok && (typ == wireStart || typ > wireFixed32):
			t.Errorf("walkTag(%x) read a key of wire type %d", b, typ)
		}
		if a := testing.AllocsPerRun(5, func() { walkTag(b, 0) }); a != 0 {
			t.Errorf("walkTag(%x) allocated %v times", b, a)
		}
	})
}

// The split looks into every value long enough as if it were a message,
// strings included, whose bytes fail as one (a letter is a group's key or
// an illegal wire type): a failure costs it no error. A realistic Pod's
// record made 13-14 allocations before (of 48 B each, errors made and
// dropped), 5-6 since (BenchmarkCompactRecord).
func TestCompactRecordMakesNoErrors(t *testing.T) {
	pods := testobj.RealisticPods("shop", 400, 4)
	encs := make([][]byte, len(pods))
	for i, p := range pods {
		encs[i] = marshalPod(t, p)
	}
	_, c := newPodCompact(t)
	for _, b := range encs[:200] { // the tables fill with what the siblings share
		if _, err := c.Protobuf(b); err != nil {
			t.Fatal(err)
		}
	}
	i := 200
	got := testing.AllocsPerRun(150, func() {
		if _, err := c.Protobuf(encs[i]); err != nil {
			t.Fatal(err)
		}
		i++
	})
	if got > 9 {
		t.Errorf("a realistic Pod's record made %v allocations, want at most 9", got)
	}
}
