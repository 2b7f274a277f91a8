package faults

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/typedkube/informer/e2e/internal/kubetest"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// faulter injects faults into the suite's server and checks that each had its effect on the
// informers.
type faulter struct {
	log      *kubetest.RequestLog // the informers' requests
	subjects []*subject
	// anchor makes a write to a resource other than PodTemplates.
	anchor func(context.Context) error
	// podTemplates is the writer of PodTemplates.
	podTemplates *writer
}

// inject injects one fault of kind and returns once it is over and its effect was seen, with a
// description of that effect.
func (f *faulter) inject(ctx context.Context, kind faultKind) (string, error) {
	switch kind {
	case restart:
		return f.restart(ctx)
	case compact:
		return f.compact(ctx)
	case drop:
		return f.drop(ctx)
	case throttle:
		return f.throttle(ctx)
	}
	return "", fmt.Errorf("unknown fault %q", kind)
}

// errorMarks are the numbers of watch errors each subject had seen.
func (f *faulter) errorMarks() []int {
	marks := make([]int, len(f.subjects))
	for i, s := range f.subjects {
		marks[i] = s.errs.Len()
	}
	return marks
}

// errorsSince counts the watch errors of the subjects since marks that match keep.
func (f *faulter) errorsSince(marks []int, keep func(error) bool) int {
	n := 0
	for i, s := range f.subjects {
		for _, err := range s.errs.Since(marks[i]) {
			if keep == nil || keep(err) {
				n++
			}
		}
	}
	return n
}

// restart restarts the API server. The informers' watches end with it; once it is back, a
// watch from their old resource versions gets 410 Gone from its new watch cache, and they
// list again.
func (f *faulter) restart(ctx context.Context) (string, error) {
	marks := f.errorMarks()
	if err := srv.RestartAPIServer(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d watch errors so far, %d of them 410", f.errorsSince(marks, nil), f.errorsSince(marks, isExpired)), nil
}

// compact compacts etcd while the writers of the other resources go on, then drops every
// connection: the PodTemplate informer, whose watch bypasses the watch cache, watches again from
// a compacted revision and gets 410 Gone.
//
// A watch from resource version rv starts at revision rv+1, which must be older than the
// revision compacted to (that one stays readable). So the writer of PodTemplates pauses from
// before the compaction until the informer has watched again, and another resource is written
// twice before the compaction: the last PodTemplate change the informer saw is then at least two
// revisions older than the compaction.
func (f *faulter) compact(ctx context.Context) (string, error) {
	f.podTemplates.hold()
	defer f.podTemplates.release()
	for range 2 {
		if err := f.anchor(ctx); err != nil {
			return "", fmt.Errorf("write before the compaction: %w", err)
		}
	}
	pt := f.subject(podTemplatesGVR)
	ptIndex := slices.Index(f.subjects, pt)
	marks := f.errorMarks()
	start := time.Now()
	rev, err := srv.CompactEtcd(ctx)
	if err != nil {
		return "", err
	}
	dropped := srv.DropConnections()
	if err := kubetest.WaitFor(ctx, 30*time.Second, "410 Gone for the PodTemplate informer", func() bool {
		return pt.errs.Count(isExpired) > 0 && f.errorsSince(marks, isExpired) > 0
	}); err != nil {
		var reqs []string
		for _, r := range f.log.Requests(func(r kubetest.Request) bool {
			return r.Resource() == "podtemplates" && !r.Time.Before(start)
		}) {
			reqs = append(reqs, r.Time.Format("15:04:05.000")+" "+r.String())
		}
		return "", fmt.Errorf("%w: %w; errors %v; requests since %s: %v", errNoEffect, err, pt.errs.Since(marks[ptIndex]),
			start.Format("15:04:05.000"), reqs)
	}
	return fmt.Sprintf("compacted at revision %d, %d connections dropped, %d 410s", rev, dropped, f.errorsSince(marks, isExpired)), nil
}

// drop cuts every connection through the proxy, and waits until every informer has watched
// again.
func (f *faulter) drop(ctx context.Context) (string, error) {
	isWatch := func(r kubetest.Request) bool { return r.Watch() }
	before := f.log.Count(isWatch)
	dropped := srv.DropConnections()
	if dropped == 0 {
		return "", fmt.Errorf("%w: no connection to drop", errNoEffect)
	}
	want := before + len(f.subjects)
	if err := kubetest.WaitFor(ctx, 30*time.Second, "a new watch of each informer", func() bool { return f.log.Count(isWatch) >= want }); err != nil {
		return "", fmt.Errorf("%w: %w", errNoEffect, err)
	}
	return fmt.Sprintf("%d connections dropped, %d new watches", dropped, f.log.Count(isWatch)-before), nil
}

// throttle makes the server answer the informers' identity with 429, cuts their watches so that
// they watch again into the 429s, waits until the server has refused some of their requests,
// and lifts the throttle.
func (f *faulter) throttle(ctx context.Context) (string, error) {
	is429 := func(r kubetest.Request) bool { return r.Status == 429 }
	before := f.log.Count(is429)
	if err := srv.Throttle(ctx); err != nil {
		return "", err
	}
	dropped := srv.DropConnections()
	err := kubetest.WaitFor(ctx, 30*time.Second, "429 for the informers' requests", func() bool { return f.log.Count(is429) > before })
	throttled := f.log.Count(is429) - before
	if uerr := srv.Unthrottle(ctx); uerr != nil {
		return "", uerr
	}
	if err != nil {
		return "", fmt.Errorf("%w: %w", errNoEffect, err)
	}
	return fmt.Sprintf("%d connections dropped, %d requests refused with 429", dropped, throttled), nil
}

func (f *faulter) subject(gvr schema.GroupVersionResource) *subject {
	for _, s := range f.subjects {
		if s.gvr == gvr {
			return s
		}
	}
	panic("no subject for " + gvr.String())
}
