package wire

import (
	"bytes"
	"slices"
	"testing"

	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
)

// containerSpans returns where the containers of a Pod's encoding lie:
// the value of each spec.containers field, in order.
func containerSpans(t *testing.T, enc []byte) [][2]int {
	t.Helper()
	// values returns the values of field num of the message b, a part of
	// enc whose capacity runs to enc's end, as fields slices them.
	values := func(b []byte, num int32) [][]byte {
		var out [][]byte
		if err := fields(b, func(n int32, typ int, v []byte) error {
			if n == num && typ == wireBytes {
				out = append(out, v)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	spec := values(enc, 2)
	if len(spec) != 1 {
		t.Fatalf("%d specs in the encoding", len(spec))
	}
	var out [][2]int
	for _, c := range values(spec[0], 2) {
		at := cap(enc) - cap(c)
		out = append(out, [2]int{at, at + len(c)})
	}
	return out
}

// refsIn counts the refs of r that lie inside enc[start:end], r's
// encoding, and the bytes of it that are r's own.
func refsIn(r *Record, start, end int) (refs, own int) {
	_, placed := r.appendPlaced(nil, nil)
	own = end - start
	for _, rf := range placed {
		if int(rf.at) >= start && int(rf.at+rf.n) <= end {
			refs++
			own -= int(rf.n)
		}
	}
	return refs, own
}

// A container whose mount of the Pod's own token volume differs from its
// siblings' in five characters shares the fields before that mount as one
// run and those after it as another (spans), where it shared each of
// them as a run of its own and held the short ones and every tag between
// them. The mount itself is in each of the Pod's three containers: the
// second and third meet it as a run the Pod's first container made, the
// Pod's own, which ends their spans as a value looked into does.
func TestSpansAroundOwnValue(t *testing.T) {
	runs := newSharedRuns()
	s := &splitter{runs: &runs}
	pods := testobj.OwnTokenPods("shop", 60, 1) // one ReplicaSet's
	var last *Record
	var enc []byte
	for _, p := range pods {
		enc = marshalPod(t, p)
		last = s.record(enc, false, nil)
		if got := last.AppendTo(nil); !bytes.Equal(got, enc) {
			t.Fatalf("the record gives back %d bytes that are not its %d", len(got), len(enc))
		}
	}
	containers := containerSpans(t, enc)
	if len(containers) != 3 {
		t.Fatalf("%d containers, want 3", len(containers))
	}
	for k, c := range containers {
		refs, own := refsIn(last, c[0], c[1])
		t.Logf("container %d: %d B, %d refs, %d B own", k, c[1]-c[0], refs, own)
		// The spans before and after the mount, and the mount's path
		// or the mount as the Pod's run.
		if refs > 3 {
			t.Errorf("container %d (%d B) is cut into %d refs, want at most 3", k, c[1]-c[0], refs)
		}
		if own > 64 {
			t.Errorf("container %d holds %d B of its own, want at most 64", k, own)
		}
	}
}

// An update that changes a field inside a span (a container's image, in
// place) is cut beside the old record, which has no run inside that field
// nor inside the unchanged fields beside it: those are cut as changed
// values, finding their runs in the table, and do not stay in the new
// record's own bytes. The container then holds what it held in a record
// cut before spans (389 B: the new image, and the short fields between its
// runs that its siblings' records share as gaps); taking the unchanged
// fields' runs from old, as a field outside a span does, found none, and
// left 938 B of the container's 983 in the record.
func TestRecordBesideSpan(t *testing.T) {
	runs := newSharedRuns()
	s := &splitter{runs: &runs}
	pods := testobj.OwnTokenPods("shop", 60, 1)
	var old *Record
	for _, p := range pods {
		old = s.record(marshalPod(t, p), false, nil)
	}
	p := pods[len(pods)-1].DeepCopy()
	p.ResourceVersion += "1"
	p.Spec.Containers[0].Image += "-patched"
	enc := marshalPod(t, p)
	r := s.record(enc, false, old)
	if got := r.AppendTo(nil); !bytes.Equal(got, enc) {
		t.Fatalf("the record beside gives back %d bytes that are not its %d", len(got), len(enc))
	}
	app := containerSpans(t, enc)[0]
	refs, own := refsIn(r, app[0], app[1])
	t.Logf("record %d B, before %d B; the app container: %d refs, %d B own of %d", r.Bytes(), old.Bytes(), refs, own, app[1]-app[0])
	if own > 450 {
		t.Errorf("the changed container holds %d B of its own (of %d), want at most 450", own, app[1]-app[0])
	}

	// An update cuts no spans, not even in the messages whose fields it
	// no longer pairs with old's: a volume added puts a volume where old
	// has its first container, and the containers are cut without old;
	// the first, given another image and a variable more, has spans no
	// record had (a record cut on its own would meet them).
	p = pods[len(pods)-1].DeepCopy()
	p.ResourceVersion += "2"
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "EXTRA", Value: "1"})
	p.Spec.Containers[0].Image += "-patched"
	spans := slices.Clone(runs.spans)
	enc = marshalPod(t, p)
	if got := s.record(enc, false, old).AppendTo(nil); !bytes.Equal(got, enc) {
		t.Fatalf("the record beside gives back %d bytes that are not its %d", len(got), len(enc))
	}
	if !slices.Equal(spans, runs.spans) {
		t.Error("an update's record met spans")
	}
}

// The spans of siblings that share little in each message (the bench
// Pods: each one's name in its first container's environment, its IP in
// its status) are not made runs that nobody shares, and do not fill the
// table of values met again: what a record and the table hold for them
// does not grow (453 B and 2 B a Pod before spans; 432 B and 5 B with
// them), and few values wait there for another meeting.
func TestSpansOfUnsharedFields(t *testing.T) {
	runs := newSharedRuns()
	s := &splitter{runs: &runs}
	pods := testobj.BenchPods(2000, 10)
	perRecord := 0
	for i, p := range pods {
		r := s.record(marshalPod(t, p), false, nil)
		if i >= len(pods)/2 {
			perRecord += r.Bytes()
		}
	}
	perRecord /= len(pods) - len(pods)/2
	table := runs.bytes / len(pods)
	t.Logf("%d B a record, %d B of runs a Pod, %d values met again", perRecord, table, len(runs.again))
	if perRecord+table > 460 {
		t.Errorf("a bench Pod costs %d B in its record and %d B in the table, want at most 460 in all", perRecord, table)
	}
	if len(runs.again) > 100 {
		t.Errorf("%d values and spans counted as met again, want at most 100", len(runs.again))
	}
}

// metadataSpan returns where a Pod's labels, annotations and owner
// references lie in its encoding enc: from the first label to the end of
// the last owner reference.
func metadataSpan(t *testing.T, enc []byte) (start, end int) {
	t.Helper()
	var meta []byte
	if err := fields(enc, func(n int32, typ int, v []byte) error {
		if n == 1 && typ == wireBytes {
			meta = v
		}
		return nil
	}); err != nil || meta == nil {
		t.Fatalf("no metadata in the encoding: %v", err)
	}
	start, end = -1, -1
	if err := fields(meta, func(n int32, typ int, v []byte) error {
		if n >= 11 && n <= 13 { // labels, annotations, ownerReferences
			at := cap(enc) - cap(v)
			if start < 0 {
				// The field's tag and length come before its value.
				start = at - 2
			}
			end = at + len(v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return start, end
}

// A span that holds the object's own short values is not a shared run,
// but the refs between them are the siblings': a Pod's metadata after its
// uid holds its resource version and creation time (its own, each a few
// bytes), then its labels, annotations and owner references, shared
// values each with a tag and a length between them. The refs from the
// first label to the last owner reference, with at most maxGlue own bytes
// between each two, are a core of the span, which a sibling's record
// shares as one ref, where it held 15 refs and their 14 tags of its own
// (the first label, short, stays its own).
// The same holds in a container status (its image and image ID beside
// its times). Each record gives back its encoding.
func TestSpanCores(t *testing.T) {
	for _, w := range []struct {
		name string
		pods func(string, int, int) []*corev1.Pod
	}{{"realistic", testobj.RealisticPods}, {"owntoken", testobj.OwnTokenPods}, {"harsh", testobj.HarshPods}} {
		t.Run(w.name, func(t *testing.T) {
			runs := newSharedRuns()
			s := &splitter{runs: &runs}
			var last *Record
			var enc []byte
			for _, p := range w.pods("shop", 40, 1) { // one ReplicaSet's
				enc = marshalPod(t, p)
				last = s.record(enc, false, nil)
				if got := last.AppendTo(nil); !bytes.Equal(got, enc) {
					t.Fatalf("the record gives back %d bytes that are not its %d", len(got), len(enc))
				}
			}
			start, end := metadataSpan(t, enc)
			refs, own := refsIn(last, start, end)
			t.Logf("labels to owner references: %d B, %d refs, %d B own", end-start, refs, own)
			// The first label (app=...) is short: not a shared value, so
			// not a ref, and the core starts after it.
			if refs != 1 || own > 24 {
				t.Errorf("labels to owner references (%d B) are %d refs and %d B of the record's own, want one ref and the first label", end-start, refs, own)
			}
		})
	}
}
