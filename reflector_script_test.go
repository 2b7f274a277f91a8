package informer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
)

// A reflector script (testdata/reflector/*.txt) describes what a scripted
// ListerWatcher answers, in order, and holds the trace a run of the
// Reflector produced, under the line "-- want --". Run the tests with
// -update to rewrite the traces, and review them as diffs.
//
// Lines starting with # are comments. Header lines:
//
//	options KEY=VALUE ...   watchlist=auto|on|off, resync=DUR, shouldresync=false,
//	                        pagesize=N, minwatch=DUR, internalretry=DUR,
//	                        unsupported (the ListerWatcher carries client-go's
//	                        marker against watch-list), backoff=DUR (Backoff.Initial)
//	upstream skip: REASON   do not compare this script with client-go's Reflector
//
// Steps, each answering the next call of its kind (a call of the other kind
// is recorded as unexpected and ends the run, as does any call once the
// steps run out):
//
//	list [rv=RV] [continue=TOKEN] [remaining=N] [items=NAME@RV,...]
//	list-error KIND
//	watch-error KIND
//	watch                   followed by indented event lines:
//	    added|modified|deleted NAME@RV
//	    bookmark [RV] [end|end=false]
//	    error KIND          an ERROR event with the Status of KIND
//	    error-object        an ERROR event carrying a Pod
//	    error-nil           an ERROR event with no object
//	    wrongtype NAME@RV   a MODIFIED event carrying a Service
//	    nilobject           an ADDED event with no object
//	    typednil            an ADDED event with a nil *Pod
//	    unknown NAME@RV     an event of type UNKNOWN
//	    sleep DUR
//	    close               the server closes the watch
//	    timeout             ... once the watch's TimeoutSeconds have passed
//	    cancel              wait until the Reflector is idle, then cancel its context
//	(a watch whose lines run out stays open until the Reflector stops it)
//
// Error KINDs: expired, gone, toolarge, toolarge-old, 429, refused,
// internal, invalid, forbidden, eof, other.
//
// Objects are Pods in namespace "ns".
type script struct {
	path     string
	body     string // the file up to the want marker
	want     string
	opts     scriptOptions
	upstream string // why not to compare with upstream; "" to compare
	steps    []step
}

type scriptOptions struct {
	watchList      WatchListMode
	resync         time.Duration
	noShouldResync bool
	pageSize       int64
	minWatch       time.Duration
	internalRetry  time.Duration
	unsupported    bool
	backoff        time.Duration
}

type step struct {
	line   int
	kind   string // list, list-error, watch, watch-error
	page   *ListPage[*corev1.Pod]
	err    string
	events []scriptEvent
}

type scriptEvent struct {
	line int
	op   string
	args []string
}

const wantMarker = "-- want --\n"

func parseScript(t *testing.T, path string) *script {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	sc := &script{path: path, body: text}
	if i := strings.Index(text, wantMarker); i >= 0 {
		sc.body, sc.want = text[:i], text[i+len(wantMarker):]
	}
	fail := func(line int, format string, args ...any) {
		t.Helper()
		t.Fatalf("%s:%d: %s", path, line, fmt.Sprintf(format, args...))
	}
	sc.opts.watchList = WatchListOff
	s := bufio.NewScanner(strings.NewReader(sc.body))
	for n := 1; s.Scan(); n++ {
		raw := s.Text()
		line := strings.TrimSpace(raw)
		if i := strings.Index(line, "#"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		fields := strings.Fields(line)
		indented := raw[0] == ' ' || raw[0] == '\t'
		if indented {
			if len(sc.steps) == 0 || sc.steps[len(sc.steps)-1].kind != "watch" {
				fail(n, "event line outside a watch")
			}
			w := &sc.steps[len(sc.steps)-1]
			w.events = append(w.events, scriptEvent{line: n, op: fields[0], args: fields[1:]})
			continue
		}
		switch fields[0] {
		case "options":
			if err := sc.opts.parse(fields[1:]); err != nil {
				fail(n, "%v", err)
			}
		case "upstream":
			sc.upstream = strings.TrimSpace(strings.TrimPrefix(line, "upstream skip:"))
			if sc.upstream == line || sc.upstream == "" {
				fail(n, `want "upstream skip: REASON"`)
			}
		case "list":
			page, err := parsePage(fields[1:])
			if err != nil {
				fail(n, "%v", err)
			}
			sc.steps = append(sc.steps, step{line: n, kind: "list", page: page})
		case "list-error", "watch-error":
			if len(fields) != 2 {
				fail(n, "want %s KIND", fields[0])
			}
			if _, err := scriptError(fields[1]); err != nil {
				fail(n, "%v", err)
			}
			sc.steps = append(sc.steps, step{line: n, kind: fields[0], err: fields[1]})
		case "watch":
			sc.steps = append(sc.steps, step{line: n, kind: "watch"})
		default:
			fail(n, "unknown step %q", fields[0])
		}
	}
	return sc
}

func (o *scriptOptions) parse(fields []string) error {
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		var err error
		switch k {
		case "watchlist":
			switch v {
			case "auto":
				o.watchList = WatchListAuto
			case "on":
				o.watchList = WatchListOn
			case "off":
				o.watchList = WatchListOff
			default:
				err = fmt.Errorf("bad watchlist %q", v)
			}
		case "resync":
			o.resync, err = time.ParseDuration(v)
		case "shouldresync":
			o.noShouldResync = v == "false"
		case "pagesize":
			o.pageSize, err = strconv.ParseInt(v, 10, 64)
		case "minwatch":
			o.minWatch, err = time.ParseDuration(v)
		case "internalretry":
			o.internalRetry, err = time.ParseDuration(v)
		case "backoff":
			o.backoff, err = time.ParseDuration(v)
		case "unsupported":
			o.unsupported = true
		default:
			err = fmt.Errorf("unknown option %q", k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func parsePage(fields []string) (*ListPage[*corev1.Pod], error) {
	page := &ListPage[*corev1.Pod]{}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "rv":
			page.ResourceVersion = v
		case "continue":
			page.Continue = v
		case "remaining":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, err
			}
			page.RemainingItemCount = &n
		case "items":
			for _, item := range strings.Split(v, ",") {
				p, err := parsePod(item)
				if err != nil {
					return nil, err
				}
				page.Items = append(page.Items, p)
			}
		default:
			return nil, fmt.Errorf("unknown list field %q", k)
		}
	}
	return page, nil
}

// parsePod parses NAME@RV into a Pod in namespace "ns".
func parsePod(s string) (*corev1.Pod, error) {
	name, rv, ok := strings.Cut(s, "@")
	if !ok || name == "" {
		return nil, fmt.Errorf("want NAME@RV, got %q", s)
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}, nil
}

// scriptError returns the error of a KIND.
func scriptError(kind string) (error, error) {
	switch kind {
	case "expired":
		return apierrors.NewResourceExpired("too old resource version"), nil
	case "gone":
		// What servers before 1.18 sent (apierrors.NewGone, deprecated).
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonGone,
			Message: "too old resource version",
		}}, nil
	case "toolarge":
		err := apierrors.NewTimeoutError("Too large resource version: 99, current: 20", 1)
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{
			Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version",
		}}
		return err, nil
	case "toolarge-old":
		return apierrors.NewTimeoutError("Too large resource version: 99, current: 20", 1), nil
	case "429":
		return apierrors.NewTooManyRequests("too many requests, please try again later", 1), nil
	case "refused":
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, nil
	case "internal":
		return apierrors.NewInternalError(errors.New("etcd is sad")), nil
	case "invalid":
		return apierrors.NewInvalid(schema.GroupKind{Kind: "ListOptions"}, "", field.ErrorList{
			field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"),
		}), nil
	case "forbidden":
		return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no RBAC rule")), nil
	case "eof":
		return io.ErrUnexpectedEOF, nil
	case "other":
		return errors.New("something else broke"), nil
	}
	return nil, fmt.Errorf("unknown error kind %q", kind)
}

// statusOf returns the Status an ERROR event of KIND carries.
func statusOf(kind string) *metav1.Status {
	err, _ := scriptError(kind)
	var s apierrors.APIStatus
	if !errors.As(err, &s) {
		return &metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
	}
	st := s.Status()
	return &st
}

// scriptResult is what a run of a script produced.
type scriptResult struct {
	trace string
	calls []call
	store string // sorted NAME@RV
	rv    string
}

// runScript runs our Reflector against the script sc, in a synctest
// bubble, until the script ends, and returns its trace.
func runScript(t *testing.T, sc *script) scriptResult {
	t.Helper()
	var res scriptResult
	synctest.Test(t, func(t *testing.T) {
		tr := newTracer()
		ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logr.Discard()))
		defer cancel()
		fake := newFakeLW(sc, tr, cancel)
		var lw ListerWatcher[*corev1.Pod] = fake
		if sc.opts.unsupported {
			lw = WithoutWatchList(lw)
		}
		store := &recordingStore{Store: NewStore(MetaNamespaceKeyFunc[*corev1.Pod]), tr: tr}
		opts := ReflectorOptions{
			ResyncPeriod:       sc.opts.resync,
			MinWatchTimeout:    sc.opts.minWatch,
			PageSize:           sc.opts.pageSize,
			WatchList:          sc.opts.watchList,
			InternalErrorRetry: sc.opts.internalRetry,
			Backoff:            Backoff{Initial: sc.opts.backoff},
			WatchErrorHandler: func(_ context.Context, err error) {
				tr.logf("error: %v", err)
			},
		}
		if sc.opts.noShouldResync {
			opts.ShouldResync = func() bool {
				tr.logf("should resync? no")
				return false
			}
		}
		r, err := NewReflector(lw, store, opts)
		if err != nil {
			t.Fatal(err)
		}
		r.random = rand.New(rand.NewPCG(1, 2)).Float64
		err = r.Run(ctx)
		tr.logf("run returned %v", err)
		if ids := fake.unstopped(); len(ids) > 0 {
			t.Errorf("watchers %v were not stopped", ids)
		}
		res = scriptResult{
			trace: tr.String(),
			calls: fake.calls,
			store: storeContents(store.List()),
			rv:    r.LastSyncResourceVersion(),
		}
		res.trace += fmt.Sprintf("store: %s\nlast sync rv: %q\n", res.store, res.rv)
	})
	return res
}

func scriptFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/reflector/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	return files
}

// TestReflectorScripts runs every script and compares the trace with the
// one recorded in the script (rewritten with -update).
func TestReflectorScripts(t *testing.T) {
	for _, path := range scriptFiles(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".txt")
		t.Run(name, func(t *testing.T) {
			sc := parseScript(t, path)
			got := runScript(t, sc).trace
			if *update {
				if err := os.WriteFile(path, []byte(sc.body+wantMarker+got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(sc.want, got); diff != "" {
				t.Errorf("trace differs from %s (-want +got); run with -update to accept:\n%s", path, diff)
			}
		})
	}
}
