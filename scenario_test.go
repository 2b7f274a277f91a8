package informer

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	scenario "github.com/typedkube/informer/internal/script"
	"github.com/typedkube/informer/internal/testobj"
)

// TestScenarios runs the scripts under testdata/scenarios. Run with -update
// to rewrite their expected output.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario scripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			w := &world{}
			scenario.Run(t, file, *update, w.exec)
		})
	}
}

// world is the state of one scenario: the structure under test and, for a
// DeltaFIFO with KnownObjects, the consumer's store.
type world struct {
	indexer *Indexer[*corev1.Pod]
	fifo    *FIFO[*corev1.Pod]
	dfifo   *DeltaFIFO[*corev1.Pod]
	known   *Indexer[*corev1.Pod]
}

var scenarioIndexes = Indexers[*corev1.Pod]{
	NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod],
	"app":          appIndex,
	"tags":         tagsIndex,
}

// scenarioPod reads "ns/name@rv:label=value;label=value"; the namespace, the
// resource version and the labels are optional.
func scenarioPod(t *testing.T, s string) *corev1.Pod {
	t.Helper()
	id, labels, _ := strings.Cut(s, ":")
	id, rv, _ := strings.Cut(id, "@")
	ns, name, err := SplitMetaNamespaceKey(id)
	if err != nil {
		t.Fatalf("bad object %q: %v", s, err)
	}
	var ls []string
	if labels != "" {
		ls = strings.Split(labels, ";")
	}
	return testobj.Pod(ns, name, rv, ls...)
}

func podString(p *corev1.Pod) string {
	if p == nil {
		return "<nil>"
	}
	key, _ := MetaNamespaceKeyFunc(p)
	return key + "@" + p.ResourceVersion
}

func podsString(ps []*corev1.Pod) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = podString(p)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

func deltasString(d Deltas[*corev1.Pod]) string {
	out := make([]string, len(d))
	for i, x := range d {
		if x.Tombstone != nil {
			out[i] = fmt.Sprintf("%s(tombstone %s last=%s)", x.Type, x.Tombstone.Key, podString(x.Object))
		} else {
			out[i] = fmt.Sprintf("%s(%s)", x.Type, podString(x.Object))
		}
	}
	return strings.Join(out, " ")
}

func errLine(err error) string {
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	return ""
}

func (w *world) exec(t *testing.T, c scenario.Cmd) string {
	t.Helper()
	objs := func() []*corev1.Pod {
		var out []*corev1.Pod
		for _, a := range c.Args {
			out = append(out, scenarioPod(t, a))
		}
		return out
	}
	switch c.Name {
	case "indexer", "fifo", "deltafifo":
		*w = world{}
	}
	switch c.Name {
	case "indexer":
		idx := Indexers[*corev1.Pod]{}
		for _, name := range c.Args {
			idx[name] = scenarioIndexes[name]
		}
		w.indexer = NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], idx)
	case "fifo":
		w.fifo = NewFIFO(MetaNamespaceKeyFunc[*corev1.Pod])
	case "deltafifo":
		opts := DeltaFIFOOptions[*corev1.Pod]{EmitDeltaTypeReplaced: c.Has("emit-replaced")}
		if c.Has("known") {
			w.known = NewIndexer(MetaNamespaceKeyFunc[*corev1.Pod], nil)
			opts.KnownObjects = sortedKnown{w.known}
		}
		w.dfifo = NewDeltaFIFO(opts)
	case "known":
		for _, p := range objs() {
			w.known.Add(p)
		}
	case "add", "update", "delete", "replace":
		return w.write(c.Name, objs())
	case "resync":
		switch {
		case w.dfifo != nil:
			return errLine(w.dfifo.Resync())
		default:
			return errLine(w.fifo.Resync())
		}
	case "pop":
		return w.pop(c.Has("requeue"))
	case "drain":
		var out strings.Builder
		for w.pending() {
			out.WriteString(w.pop(false))
		}
		return out.String()
	case "close":
		if w.dfifo != nil {
			w.dfifo.Close()
		} else {
			w.fifo.Close()
		}
	case "synced":
		if w.dfifo != nil {
			return fmt.Sprintf("synced: %v\n", w.dfifo.HasSynced())
		}
		return fmt.Sprintf("synced: %v\n", w.fifo.HasSynced())
	case "queue":
		if w.dfifo != nil {
			return strings.TrimSpace("queue: "+strings.Join(w.dfifo.ListKeys(), " ")) + "\n"
		}
		return strings.TrimSpace("queue: "+strings.Join(sorted(w.fifo.ListKeys()), " ")) + "\n"
	case "list":
		switch {
		case w.indexer != nil:
			return fmt.Sprintf("list: %s\n", podsString(w.indexer.List()))
		case w.known != nil && c.Has("known"):
			return fmt.Sprintf("known: %s\n", podsString(w.known.List()))
		}
	case "by-index":
		got, err := w.indexer.ByIndex(c.Arg(0), c.Arg(1))
		if err != nil {
			return errLine(err)
		}
		return strings.TrimSpace(fmt.Sprintf("by-index %s=%s: %s", c.Arg(0), c.Arg(1), podsString(got))) + "\n"
	case "values":
		var out strings.Builder
		for _, name := range sorted(keysOf(w.indexer.GetIndexers())) {
			fmt.Fprintf(&out, "%s:", name)
			for _, v := range sorted(w.indexer.ListIndexFuncValues(name)) {
				keys, _ := w.indexer.IndexKeys(name, v)
				fmt.Fprintf(&out, " %s=[%s]", v, strings.Join(keys, " "))
			}
			out.WriteString("\n")
		}
		return out.String()
	case "add-indexers":
		idx := Indexers[*corev1.Pod]{}
		for _, name := range c.Args {
			idx[name] = scenarioIndexes[name]
		}
		return errLine(w.indexer.AddIndexers(idx))
	default:
		t.Fatalf("line %d: unknown command %q", c.Line, c.Name)
	}
	return ""
}

func (w *world) write(op string, objs []*corev1.Pod) string {
	var s interface {
		Add(*corev1.Pod) error
		Update(*corev1.Pod) error
		Delete(*corev1.Pod) error
		Replace([]*corev1.Pod, string) error
	}
	switch {
	case w.indexer != nil:
		s = w.indexer
	case w.dfifo != nil:
		s = w.dfifo
	default:
		s = w.fifo
	}
	var out strings.Builder
	if op == "replace" {
		return errLine(s.Replace(objs, ""))
	}
	for _, p := range objs {
		switch op {
		case "add":
			out.WriteString(errLine(s.Add(p)))
		case "update":
			out.WriteString(errLine(s.Update(p)))
		case "delete":
			out.WriteString(errLine(s.Delete(p)))
		}
	}
	return out.String()
}

func (w *world) pending() bool {
	if w.dfifo != nil {
		return w.dfifo.Len() > 0
	}
	return len(w.fifo.ListKeys()) > 0
}

// pop pops one item, as a consumer would: a DeltaFIFO's Deltas are applied
// to the known store. With requeue the processing fails and asks for a
// retry.
func (w *world) pop(requeue bool) string {
	if !w.pending() {
		return "pop: empty\n"
	}
	fail := errors.New("processing failed")
	var line string
	var err error
	if w.dfifo != nil {
		_, err = w.dfifo.Pop(func(d Deltas[*corev1.Pod], initial bool) error {
			key, _ := w.dfifo.KeyOf(d)
			line = fmt.Sprintf("pop %s initial=%v: %s", key, initial, deltasString(d))
			if requeue {
				return &RequeueError{Err: fail}
			}
			if w.known != nil {
				applyTyped(w.known, d)
			}
			return nil
		})
	} else {
		_, err = w.fifo.Pop(func(p *corev1.Pod, initial bool) error {
			line = fmt.Sprintf("pop %s initial=%v", podString(p), initial)
			if requeue {
				return &RequeueError{Err: fail}
			}
			return nil
		})
	}
	if err != nil {
		line += " -> " + err.Error()
	}
	return line + "\n"
}
