package wire

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/typedkube/informer/internal/testobj"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// benchPod is a Pod as the API server returns one of the e2e benchmarks' Pods: about 1.5 KB of
// spec, plus the defaults, the service account volume and a managedFields entry.
func benchPod(i int) *corev1.Pod {
	grace, mode := int64(30), int32(420)
	exp := int64(3607)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("pod-%05d", i), Namespace: "bench-pods-10k-abcde", UID: "8d2c5f0e-5b7a-4f65-9c1e-0d1c2b3a4f5e",
			ResourceVersion: fmt.Sprint(100000 + i), CreationTimestamp: metav1.Now(),
			Labels: map[string]string{
				"app": "bench", "tier": []string{"web", "api", "db"}[i%3], "shard": fmt.Sprint(i % 16),
				"app.kubernetes.io/part-of": "informer-bench", "app.kubernetes.io/version": "v1.2.3",
			},
			Annotations:   map[string]string{"bench.typedkube.io/note": strings.Repeat("x", 300)},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "benchmarks.test", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(strings.Repeat(`{"f:spec":{}}`, 40))}},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "main",
				Image: "registry.k8s.io/pause:3.10",
				Args:  []string{"--listen=:8080", "--verbose", fmt.Sprintf("--id=%d", i)},
				Env: []corev1.EnvVar{
					{Name: "POD_INDEX", Value: fmt.Sprint(i)},
					{Name: "MODE", Value: "benchmark"},
					{Name: "LOG_LEVEL", Value: "info"},
				},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: "TCP"}, {Name: "metrics", ContainerPort: 9090, Protocol: "TCP"}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				VolumeMounts:             []corev1.VolumeMount{{Name: "kube-api-access-x7k2p", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: "File",
				ImagePullPolicy:          "IfNotPresent",
			}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				DefaultMode: &mode,
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &exp, Path: "token"}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				},
			}}}},
			RestartPolicy:                 "Always",
			TerminationGracePeriodSeconds: &grace,
			DNSPolicy:                     "ClusterFirst",
			ServiceAccountName:            "default",
			SchedulerName:                 "default-scheduler",
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: &exp},
				{Key: "node.kubernetes.io/unreachable", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: &exp},
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable},
	}
}

type benchSlim struct {
	Meta[benchSlim]
	Spec struct {
		NodeName   string
		Containers []struct{ Name, Image string }
	}
	Status struct{ Phase corev1.PodPhase }
}

// BenchmarkDecodePod decodes the protobuf of 1,000 Pods: impl=upstream with the generated
// Unmarshal, impl=typed with package wire (the full Pod, and the projection benchSlim).
func BenchmarkDecodePod(b *testing.B) {
	var msgs [][]byte
	for i := range 1000 {
		m, err := benchPod(i).Marshal()
		if err != nil {
			b.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	b.Run("object=full/impl=upstream", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			p := &corev1.Pod{}
			if err := p.Unmarshal(msgs[i%len(msgs)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	full, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("object=full/impl=typed", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := full.Protobuf(msgs[i%len(msgs)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	slim, err := NewDecoder[*benchSlim, *corev1.Pod](Options{Annotations: func(string) bool { return false }})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("object=projection/impl=typed", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := slim.Protobuf(msgs[i%len(msgs)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkRealisticPodHeap decodes the protobuf of 2,000 realistic Pods of 20 ReplicaSets
// (testobj.RealisticPods: about 11 KB each, managedFields as the API server writes them) and
// keeps them all, as a cache does; it reports the live heap they hold, per Pod (B/object):
//   - object=full: impl=upstream with the generated Unmarshal, impl=typed with package wire's
//     defaults (strings, maps and FieldsV1 shared);
//   - object=nomanagedfields: client-go's objects without managedFields (a transform that drops
//     them, as controller-runtime offers), and wire.Options.DropManagedFields;
//   - object=projection: client-go's objects cut by a transform to a few fields
//     (testobj.SlimPod: those of benchSlim, plus labels and owners), and benchSlim decoded by
//     package wire, annotations dropped;
//   - object=compact: a compact store's records of the same bytes and the runs they share;
//   - tokens=own: testobj.OwnTokenPods, each Pod's token volume named for the Pod, as a
//     cluster's ServiceAccount admission names it.
func BenchmarkRealisticPodHeap(b *testing.B) {
	pods := testobj.RealisticPods("bench-realistic", 2000, 20)
	msgs := make([][]byte, len(pods))
	for i, p := range pods {
		m, err := p.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		msgs[i] = m
	}
	upstream := func(transform func(*corev1.Pod) *corev1.Pod) func([]byte) (any, error) {
		return func(m []byte) (any, error) {
			p := &corev1.Pod{}
			if err := p.Unmarshal(m); err != nil {
				return nil, err
			}
			return transform(p), nil
		}
	}
	typed := func(b *testing.B, opts Options) func([]byte) (any, error) {
		d, err := NewDecoder[*corev1.Pod, *corev1.Pod](opts)
		if err != nil {
			b.Fatal(err)
		}
		return func(m []byte) (any, error) { return d.Protobuf(m) }
	}
	b.Run("object=full/impl=upstream", func(b *testing.B) {
		heldPerObject(b, msgs, upstream(func(p *corev1.Pod) *corev1.Pod { return p }))
	})
	b.Run("object=full/impl=typed", func(b *testing.B) { heldPerObject(b, msgs, typed(b, Options{})) })
	// tokens=own: each Pod's service-account token volume named for the
	// Pod, as ServiceAccount admission names it in a cluster (after the
	// field manager: in no managedFields entry), where RealisticPods name
	// it for the ReplicaSet in the create: the Pod's volumes and each
	// container's mounts are then its own.
	own := make([][]byte, len(pods))
	for i, p := range testobj.OwnTokenPods("bench-realistic", len(pods), 20) {
		own[i] = marshalPod(b, p)
	}
	b.Run("object=full/tokens=own/impl=upstream", func(b *testing.B) {
		heldPerObject(b, own, upstream(func(p *corev1.Pod) *corev1.Pod { return p }))
	})
	b.Run("object=full/tokens=own/impl=typed", func(b *testing.B) { heldPerObject(b, own, typed(b, Options{})) })
	// object=compact: the records a compact store keeps of the same
	// bytes (Compact.Protobuf, as its list makes them), with the runs they
	// share and the codec's tables, a new codec each round.
	b.Run("object=compact/impl=typed", func(b *testing.B) { compactHeld(b, msgs) })
	b.Run("object=compact/tokens=own/impl=typed", func(b *testing.B) { compactHeld(b, own) })
	b.Run("object=nomanagedfields/impl=upstream", func(b *testing.B) {
		heldPerObject(b, msgs, upstream(func(p *corev1.Pod) *corev1.Pod { p.ManagedFields = nil; return p }))
	})
	b.Run("object=nomanagedfields/impl=typed", func(b *testing.B) {
		heldPerObject(b, msgs, typed(b, Options{DropManagedFields: true}))
	})
	b.Run("object=projection/impl=upstream", func(b *testing.B) { heldPerObject(b, msgs, upstream(testobj.SlimPod)) })
	b.Run("object=projection/impl=typed", func(b *testing.B) {
		d, err := NewDecoder[*benchSlim, *corev1.Pod](Options{Annotations: func(string) bool { return false }})
		if err != nil {
			b.Fatal(err)
		}
		heldPerObject(b, msgs, func(m []byte) (any, error) { return d.Protobuf(m) })
	})
}

// heldPerObject decodes every message with decode, keeping the objects, and reports the live
// heap they hold per object (B/object), after a full collection.
func heldPerObject(b *testing.B, msgs [][]byte, decode func([]byte) (any, error)) {
	heldEachRound(b, msgs, func() func([]byte) (any, error) { return decode })
}

// compactHeld is heldPerObject for the records of a new Compact each
// round, which holds the runs they share and its tables.
func compactHeld(b *testing.B, msgs [][]byte) {
	d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		b.Fatal(err)
	}
	heldEachRound(b, msgs, func() func([]byte) (any, error) {
		c, n := NewCompact(d, 0), 0
		return func(m []byte) (any, error) {
			if n++; n == len(msgs) {
				defer c.EndList()
			}
			return c.Protobuf(m)
		}
	})
}

// heldEachRound is heldPerObject with the decode function round returns
// for each round, which lives as long as the objects.
func heldEachRound(b *testing.B, msgs [][]byte, round func() func([]byte) (any, error)) {
	b.ReportAllocs()
	var perObject float64
	for b.Loop() {
		b.StopTimer()
		before := liveHeap()
		b.StartTimer()
		decode := round()
		held := make([]any, len(msgs))
		for i, m := range msgs {
			o, err := decode(m)
			if err != nil {
				b.Fatal(err)
			}
			held[i] = o
		}
		b.StopTimer()
		perObject = float64(liveHeap()-before) / float64(len(msgs))
		runtime.KeepAlive(held)
		runtime.KeepAlive(decode)
		b.StartTimer()
	}
	b.ReportMetric(perObject, "B/object")
}

// liveHeap returns the bytes of live heap after a full collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// statusUpdate returns the encodings of a realistic Pod and of the same
// Pod after a kubelet-like status update (testobj.RealisticPod: the Ready
// condition's time and the kubelet's managedFields entry move).
func statusUpdate(b *testing.B) (before, after []byte) {
	base := testobj.RealisticPod("bench", 3, 2)
	next := base.DeepCopy()
	moved := metav1.Unix(1_800_000_000, 0)
	next.Status.Conditions[0].LastTransitionTime = moved
	next.ManagedFields[len(next.ManagedFields)-1].Time = &moved
	return marshalPod(b, base), marshalPod(b, next)
}

// BenchmarkDecodeUpdate decodes a kubelet-like status update of a realistic Pod
// (testobj.RealisticPod: the Ready condition's time and the kubelet's managedFields entry move):
// parts=whole decodes it all, parts=reused with the parts of the Pod before it (its spec is not
// decoded, see parts.go), parts=derived with those parts derived from the Pod before it, as the
// first update of a listed Pod has them (its spec and status encoded again and hashed, the spec
// then not decoded); managedfields=drop the same with Options.DropManagedFields, which
// shows what the metadata's managedFields cost of each.
func BenchmarkDecodeUpdate(b *testing.B) {
	before, after := statusUpdate(b)
	for _, drop := range []bool{false, true} {
		d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{DropManagedFields: drop})
		if err != nil {
			b.Fatal(err)
		}
		prev, ps, err := d.protobufParts(before, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		mf := "keep"
		if drop {
			mf = "drop"
		}
		for _, reuse := range []string{"whole", "reused", "derived"} {
			name := "managedfields=" + mf + "/parts=" + reuse
			p, old := unsafe.Pointer(nil), (*parts)(nil)
			switch reuse {
			case "reused":
				p, old = unsafe.Pointer(prev), &ps
			case "derived":
				p = unsafe.Pointer(prev)
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := d.protobufParts(after, p, old); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// coldCache is memory BenchmarkDecodeUpdateColdCache writes through
// between decodes: more than this VM's last-level cache and TLB reach, as
// the API server and etcd, sharing the cores, leave the caches between two
// watch events a controller receives.
var coldCache = make([]byte, 64<<20)

// evictCaches writes a byte of each cache line of coldCache.
func evictCaches() {
	for i := 0; i < len(coldCache); i += 64 {
		coldCache[i]++
	}
}

// BenchmarkDecodeUpdateColdCache is BenchmarkDecodeUpdate's kubelet status
// patch decoded with the processor's caches emptied before each decode
// (cache=cold: 64 MiB written, outside the timer) or not (cache=warm, the
// same timer stops): what an event costs a controller whose caches the
// servers beside it have emptied since the last one, against what a loop
// decoding the same bytes over and over sees. sharing=off is
// Options.NoSharing: what the decoder's tables of shared strings, maps,
// bytes and times cost in memory accesses. parts=derived derives the
// parts of the Pod before it, as BenchmarkDecodeUpdate's. code=warm decodes another Pod
// with another decoder (a plan and tables of its own) after the caches
// are emptied: the machine code and type descriptors are then cached, the
// decoder's own data and the bytes are not. The timer's stops read the
// memory statistics, which costs every variant some of its cache.
// upstream is client-go's decode of the same bytes, whole.
func BenchmarkDecodeUpdateColdCache(b *testing.B) {
	before, after := statusUpdate(b)
	other := marshalPod(b, testobj.RealisticPod("other", 2, 1))
	warmer, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name                      string
		cold, reuse, code, derive bool
		opts                      Options
	}{
		{"cache=warm/parts=reused", false, true, false, false, Options{}},
		{"cache=cold/parts=reused", true, true, false, false, Options{}},
		{"cache=cold/parts=reused/code=warm", true, true, true, false, Options{}},
		{"cache=cold/parts=reused/sharing=off", true, true, false, false, Options{NoSharing: true}},
		{"cache=warm/parts=derived", false, false, false, true, Options{}},
		{"cache=cold/parts=derived", true, false, false, true, Options{}},
		{"cache=warm/parts=whole", false, false, false, false, Options{}},
		{"cache=cold/parts=whole", true, false, false, false, Options{}},
	} {
		d, err := NewDecoder[*corev1.Pod, *corev1.Pod](c.opts)
		if err != nil {
			b.Fatal(err)
		}
		prev, ps, err := d.protobufParts(before, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		p, old := unsafe.Pointer(nil), (*parts)(nil)
		switch {
		case c.reuse:
			p, old = unsafe.Pointer(prev), &ps
		case c.derive: // as the first update of a listed Pod
			p = unsafe.Pointer(prev)
		}
		var warm func() error
		if c.code {
			warm = func() error { _, _, err := warmer.protobufParts(other, nil, nil); return err }
		}
		b.Run(c.name, func(b *testing.B) {
			decodeTimed(b, c.cold, warm, func() error { _, _, err := d.protobufParts(after, p, old); return err })
		})
	}
	// client-go's decode of the same bytes (the generated Unmarshal, whole).
	for _, cold := range []bool{false, true} {
		name := "cache=warm/upstream"
		if cold {
			name = "cache=cold/upstream"
		}
		b.Run(name, func(b *testing.B) {
			decodeTimed(b, cold, nil, func() error { var pod corev1.Pod; return pod.Unmarshal(after) })
		})
	}
}

// decodeTimed times decode in b's loop; before each, outside the timer,
// it empties the caches when cold, then runs warm, if set.
func decodeTimed(b *testing.B, cold bool, warm, decode func() error) {
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		if cold {
			evictCaches()
		}
		if warm != nil {
			if err := warm(); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if err := decode(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateList validates, as a compact store's list does, the protobuf of 5,000 Pods
// with a new Decoder, ending the list (EndValidation) at the last: memo=no walks every
// Pod as Validate did before 2026-12-05, memo=yes finds the parts siblings share in the memo
// (validMemo), decode=yes is the decode that Validate stands for (Protobuf). Pods are the e2e
// benchmarks' small ones (benchPod), realistic ones of 20 ReplicaSets, and harsh ones
// (testobj.HarshPods: each one's creating manager's entry its own), the latter two as the e2e
// benchmarks list them (listedAsCreated). ns/pod is per Pod.
func BenchmarkValidateList(b *testing.B) {
	const n = 5000
	small := make([]*corev1.Pod, n)
	for i := range small {
		small[i] = benchPod(i)
	}
	for _, w := range []struct {
		name string
		pods []*corev1.Pod
	}{{"small", small}, {"realistic", listedAsCreated(testobj.RealisticPods("shop", n, 20))}, {"harsh", listedAsCreated(testobj.HarshPods("shop", n, 20))}} {
		encs := make([][]byte, len(w.pods))
		for i, p := range w.pods {
			encs[i] = marshalPod(b, p)
		}
		for _, mode := range []string{"memo=no", "memo=yes", "decode=yes"} {
			b.Run("pods="+w.name+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					d, err := NewDecoder[*corev1.Pod, *corev1.Pod](Options{})
					if err != nil {
						b.Fatal(err)
					}
					scratch := map[*op]*scratchValue{}
					for i, e := range encs {
						switch mode {
						case "memo=no": // Validate without its memo
							v := validator{filter: d.opts.Annotations, scratch: scratch}
							err = v.message(e, d.plan)
						case "memo=yes":
							err = d.Validate(e)
						default:
							_, err = d.Protobuf(e)
						}
						if err != nil {
							b.Fatal(err)
						}
						if i == len(encs)-1 {
							d.EndValidation()
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(encs)), "ns/pod")
			})
		}
	}
}

// listedAsCreated returns pods as a LIST returns them after the e2e benchmarks created them, 139 a
// second in turn over their ReplicaSets: in the order of their names, which puts a ReplicaSet's
// together, each created, and its status written, in the second of its place in the creation
// order, so that about seven siblings share each managedFields time.
func listedAsCreated(pods []*corev1.Pod) []*corev1.Pod {
	const perSecond = 139
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		p = p.DeepCopy()
		at := metav1.NewTime(p.CreationTimestamp.Add(time.Duration(i/perSecond-i) * time.Second))
		p.CreationTimestamp = at
		for j := range p.ManagedFields {
			p.ManagedFields[j].Time = &at
		}
		out[i] = p
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}
