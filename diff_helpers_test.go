package informer

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/typedkube/informer/internal/testobj"
)

// opReader decodes a byte string into the choices of a differential test, so
// that random tests and fuzz targets share one harness. Once the bytes run
// out every choice is zero.
type opReader struct {
	data []byte
	pos  int
	rv   int
	// maps are labels maps that fuzzLabelPod gives more than one Pod, as
	// the wire decoder shares one among objects with equal labels; they
	// are never modified after they are made.
	maps []map[string]string
}

func (r *opReader) more() bool { return r.pos < len(r.data) }

func (r *opReader) intn(n int) int {
	if r.pos >= len(r.data) {
		return 0
	}
	b := r.data[r.pos]
	r.pos++
	return int(b) % n
}

var (
	diffNamespaces = []string{"", "ns-a", "ns-b"}
	diffApps       = []string{"", "x", "y"}
	diffTags       = []string{"", "t1", "t1,t2", "t2,t3"}
)

// pod returns a fresh Pod from a small universe of keys, so that sequences
// revisit keys often. Every Pod gets a new resource version.
func (r *opReader) pod() *corev1.Pod {
	r.rv++
	var labels []string
	if a := diffApps[r.intn(len(diffApps))]; a != "" {
		labels = append(labels, "app="+a)
	}
	if t := diffTags[r.intn(len(diffTags))]; t != "" {
		labels = append(labels, "tags="+t)
	}
	ns := diffNamespaces[r.intn(len(diffNamespaces))]
	return testobj.Pod(ns, "p"+strconv.Itoa(r.intn(4)), strconv.Itoa(r.rv), labels...)
}

func (r *opReader) pods(max int) []*corev1.Pod {
	out := make([]*corev1.Pod, r.intn(max+1))
	for i := range out {
		out[i] = r.pod()
	}
	return out
}

// key returns a key that may or may not be stored.
func (r *opReader) key() string {
	ns := diffNamespaces[r.intn(len(diffNamespaces))]
	name := "p" + strconv.Itoa(r.intn(5))
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func appIndex(p *corev1.Pod) ([]string, error) {
	if v, ok := p.Labels["app"]; ok {
		return []string{v}, nil
	}
	return nil, nil
}

func tagsIndex(p *corev1.Pod) ([]string, error) {
	if v, ok := p.Labels["tags"]; ok {
		return strings.Split(v, ","), nil
	}
	return nil, nil
}

// untyped adapts a typed function to client-go's interface{} world.
func untyped(f IndexFunc[*corev1.Pod]) func(any) ([]string, error) {
	return func(obj any) ([]string, error) { return f(obj.(*corev1.Pod)) }
}

// samePod compares Pods by identity: both implementations are given the same
// pointers and must hand the same ones back.
var samePod = cmp.Comparer(func(a, b *corev1.Pod) bool { return a == b })

var diffOpts = cmp.Options{samePod, cmpopts.EquateEmpty()}

func sortedPods(ps []*corev1.Pod) []*corev1.Pod {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b *corev1.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name+"@"+a.ResourceVersion, b.Namespace+"/"+b.Name+"@"+b.ResourceVersion)
	})
	return ps
}

func toPods(list []any) []*corev1.Pod {
	out := make([]*corev1.Pod, len(list))
	for i, o := range list {
		out[i] = o.(*corev1.Pod)
	}
	return out
}

func toAny[T any](list []T) []any {
	out := make([]any, len(list))
	for i, o := range list {
		out[i] = o
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// runRandomSequences runs run on n pseudo-random byte strings. A failure
// names the input so that it can be replayed or added to the fuzz corpus.
func runRandomSequences(t *testing.T, n int, run func(testing.TB, []byte)) {
	t.Helper()
	if testing.Short() {
		n /= 10
	}
	r := rand.New(rand.NewPCG(0x5eed, uint64(n)))
	for i := range n {
		data := make([]byte, 8+r.IntN(120))
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		ok := t.Run(fmt.Sprint(i), func(t *testing.T) { run(t, data) })
		if !ok {
			t.Fatalf("sequence %d failed; input %s", i, hex.EncodeToString(data))
		}
	}
}

// checkErr compares two errors by presence.
func checkErr(t testing.TB, step int, what string, typed, upstream error) {
	t.Helper()
	if (typed == nil) != (upstream == nil) {
		t.Fatalf("step %d: %s: typed error %v, upstream error %v", step, what, typed, upstream)
	}
}

// checkEqual compares two slices element by element (pointers by identity)
// and reports a difference with go-cmp. The cheap comparison comes first
// because the random tests run it after every step.
func checkEqual[E comparable](t testing.TB, step int, what string, typed, upstream []E) {
	t.Helper()
	if slices.Equal(typed, upstream) {
		return
	}
	if diff := cmp.Diff(upstream, typed, diffOpts); diff != "" {
		t.Fatalf("step %d: %s differs (-upstream +typed):\n%s", step, what, diff)
	}
}

// checkDiff compares any two values with go-cmp.
func checkDiff(t testing.TB, step int, what string, typed, upstream any) {
	t.Helper()
	if diff := cmp.Diff(upstream, typed, diffOpts); diff != "" {
		t.Fatalf("step %d: %s differs (-upstream +typed):\n%s", step, what, diff)
	}
}

// podWriter and anyWriter are the write methods our structures and
// client-go's share.
type podWriter interface {
	Add(*corev1.Pod) error
	Update(*corev1.Pod) error
	Delete(*corev1.Pod) error
	Replace([]*corev1.Pod, string) error
}

type anyWriter interface {
	Add(any) error
	Update(any) error
	Delete(any) error
	Replace([]any, string) error
}

// The write operations of the differential harnesses: ops below
// writeOps are decoded by diffWrite.
const (
	opAdd = iota
	opAdd2
	opUpdate
	opDelete
	opReplace
	writeOps
)

// diffWrite applies write operation op to both implementations, with
// objects decoded from r, and compares their errors.
func diffWrite(t testing.TB, step int, r *opReader, op int, typed podWriter, upstream anyWriter) {
	t.Helper()
	switch op {
	case opAdd, opAdd2:
		p := r.pod()
		checkErr(t, step, "Add", typed.Add(p), upstream.Add(p))
	case opUpdate:
		p := r.pod()
		checkErr(t, step, "Update", typed.Update(p), upstream.Update(p))
	case opDelete:
		p := r.pod()
		checkErr(t, step, "Delete", typed.Delete(p), upstream.Delete(p))
	case opReplace:
		list := r.pods(6)
		checkErr(t, step, "Replace", typed.Replace(list, "rv"), upstream.Replace(toAny(list), "rv"))
	}
}

// inBackground calls f(0), f(1), ... on a goroutine until stop is called;
// stop returns once that goroutine has ended.
func inBackground(f func(i int)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			f(i)
		}
	})
	return func() { close(done); wg.Wait() }
}
