package wire

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedkube/informer/internal/testobj"
)

// A record cut beside the record it replaces gives back its own encoding
// whatever the two hold, takes the old record's runs in the fields that did
// not change, and looks up far fewer values than a cut of its own.
func TestRecordBeside(t *testing.T) {
	pods := testobj.RealisticPods("shop", 40, 4)
	// warmed returns a splitter whose table has seen pods, and the record
	// of pods[0] it made.
	warmed := func() (*splitter, *Record) {
		runs := newSharedRuns()
		s := &splitter{runs: &runs}
		var first *Record
		for _, p := range pods {
			r := s.record(marshalPod(t, p), false, nil)
			if first == nil {
				first = r
			}
		}
		return s, first
	}
	status := func() *corev1.Pod {
		p := pods[0].DeepCopy()
		p.ResourceVersion += "1"
		at := metav1.NewTime(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
		p.Status.Conditions[0].LastTransitionTime = at
		for i := range p.ManagedFields {
			if p.ManagedFields[i].Manager == "kubelet" {
				p.ManagedFields[i].Time = &at
			}
		}
		return p
	}
	relabeled := func() *corev1.Pod {
		p := pods[0].DeepCopy()
		p.Labels["a-new-label"] = "its-value"
		return p
	}
	garbage := make([]byte, 4000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(rng.IntN(256))
	}
	for _, tc := range []struct {
		name string
		src  []byte
		// most is the most values the cut beside may look up, as a part
		// of those a cut of its own looks up; 0: not checked.
		most float64
	}{
		{"same", marshalPod(t, pods[0]), 0.25},
		{"status", marshalPod(t, status()), 0.5},
		{"relabeled", marshalPod(t, relabeled()), 0},
		{"another pod", marshalPod(t, pods[1]), 0},
		{"garbage", garbage, 0},
		{"empty", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			own, _ := warmed()
			before := own.runs.shared
			own.record(tc.src, false, nil)
			alone := own.runs.shared - before

			s, old := warmed()
			before = s.runs.shared
			r := s.record(tc.src, false, old)
			beside := s.runs.shared - before
			if got := r.AppendTo(nil); !bytes.Equal(got, tc.src) {
				t.Fatalf("the record beside gives back %d bytes that are not its %d", len(got), len(tc.src))
			}
			t.Logf("%d values looked up beside, %d alone", beside, alone)
			if tc.most > 0 && float64(beside) > tc.most*float64(alone) {
				t.Errorf("%d values looked up beside the old record, want at most %.0f (%d alone)", beside, tc.most*float64(alone), alone)
			}
			if tc.name == "same" {
				if got, want := slices.Collect(r.eachRef), slices.Collect(old.eachRef); !slices.Equal(got, want) {
					t.Errorf("the record of the same bytes has refs %v, want the old record's %v", got, want)
				}
			}
			if tc.name == "status" {
				// Every run of the old record in its spec is the new one's.
				runs := make(map[*byte]bool)
				for rf := range r.eachRef {
					runs[rf.p] = true
				}
				specRuns := 0
				oldEnc, placed := old.appendPlaced(nil, nil)
				d, _ := newPodCompact(t)
				ps, spans, ok := d.scanParts(oldEnc)
				k := slices.IndexFunc(ps[:], func(p part) bool { return p.num == 2 })
				if !ok || k < 0 {
					t.Fatal("the old record's encoding has no spec")
				}
				spec := spans[k] // its tag, length and value
				for _, rf := range placed {
					if int(rf.at) >= spec.start && int(rf.at+rf.n) <= spec.end {
						specRuns++
						if !runs[rf.p] {
							t.Errorf("the old record's run at %d, in the spec, is not the new one's", rf.at)
						}
					}
				}
				if specRuns == 0 {
					t.Error("the old record shares no run in its spec: the case shows nothing")
				}
			}
		})
	}
}

// BenchmarkCompactUpdate makes the records of status updates of 1,000
// realistic Pods whose records a list made, as a compact store's watch
// does: cut on their own (beside=no, as before 2026-12-03) or beside each
// Pod's record before the update (beside=yes, Compact.EncodeBeside).
// B/record is what the updates' records hold on their own, shared-B/pod
// the runs the Pods' last records point at, per Pod.
func BenchmarkCompactUpdate(b *testing.B) {
	pods := testobj.RealisticPods("shop", 1000, 20)
	const versions = 4
	encs := make([][]byte, 0, len(pods)*versions)
	for v := range versions {
		at := metav1.NewTime(time.Date(2026, 12, 3, 12, v, 0, 0, time.UTC))
		for _, p := range pods {
			p = p.DeepCopy()
			p.ResourceVersion += "0" + string(rune('0'+v))
			p.Status.Conditions[0].LastTransitionTime = at
			for i := range p.ManagedFields {
				if p.ManagedFields[i].Manager == "kubelet" {
					p.ManagedFields[i].Time = &at
				}
			}
			encs = append(encs, marshalPod(b, p))
		}
	}
	for _, beside := range []bool{false, true} {
		b.Run("beside="+map[bool]string{false: "no", true: "yes"}[beside], func(b *testing.B) {
			_, c := newPodCompact(b)
			recs := make([]*Record, len(pods))
			for i, p := range pods {
				r, err := c.Protobuf(marshalPod(b, p))
				if err != nil {
					b.Fatal(err)
				}
				recs[i] = r
			}
			b.ReportAllocs()
			held, i := 0, 0
			for b.Loop() {
				k := i % len(pods)
				var old *Record
				if beside {
					old = recs[k]
				}
				r := c.record(encs[i%len(encs)], false, old)
				recs[k] = r
				held += r.Bytes()
				i++
			}
			b.ReportMetric(float64(held)/float64(i), "B/record")
			b.ReportMetric(float64(c.SharedBytesOf(slices.Values(recs)))/float64(len(recs)), "shared-B/pod")
		})
	}
}

// An object's metadata holds its key, which no other object of a store
// has: the split looks into it without looking it up or remembering it
// among the values met once, where it would push out a value siblings
// share. Checked for records cut on their own (a list) and beside the
// record they replace (an update).
func TestCompactSkipsMetadataLookup(t *testing.T) {
	pods := testobj.RealisticPods("shop", 200, 4)
	_, c := newPodCompact(t)
	metadata := func(enc []byte) []byte {
		num, typ, next, ok := walkTag(enc, 0)
		if !ok || num != 1 || typ != wireBytes {
			t.Fatal("the encoding does not start with the metadata")
		}
		vs, ve, err := lengthDelimited(enc, next)
		if err != nil {
			t.Fatal(err)
		}
		return enc[vs:ve]
	}
	check := func(what string, enc []byte) {
		t.Helper()
		h := c.runs.hash(metadata(enc))
		if slices.Contains(c.runs.seenSet(h).h[:], h) {
			t.Errorf("%s: the metadata is remembered as a value met once", what)
		}
		if _, ok := c.runs.runs[h]; ok {
			t.Errorf("%s: the metadata is a shared run", what)
		}
	}
	recs := make([]*Record, len(pods))
	for i, p := range pods {
		enc := marshalPod(t, p)
		r, err := c.Protobuf(enc)
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = r
		check("listed "+p.Name, enc)
	}
	for i, p := range pods {
		p = p.DeepCopy()
		p.ResourceVersion += "1"
		p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
		enc := marshalPod(t, p)
		r := c.record(enc, false, recs[i])
		if got := r.AppendTo(nil); !bytes.Equal(got, enc) {
			t.Fatalf("%s: the record cut beside the old one does not give back its encoding", p.Name)
		}
		check("updated "+p.Name, enc)
	}
}
