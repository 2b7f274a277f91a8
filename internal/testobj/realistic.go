package testobj

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The realistic Pods are shaped like the Pods of a Deployment in the
// Kubernetes scalability tests' "realistic" workloads, as the API server
// returns them: about 11 KB of protobuf, 60% of it managedFields.
// Pod i belongs to ReplicaSet i%replicaSets of its namespace. Each has
//   - the labels and annotations of a Deployment's Pod (pod-template-hash,
//     app.kubernetes.io/*, a config checksum), an owner reference to its
//     ReplicaSet;
//   - three containers (an app, an Envoy sidecar, a log shipper) with
//     arguments, environment variables (some from the downward API),
//     ports, requests and limits, probes, volume mounts, a security
//     context, and the defaults the API server sets;
//   - volumes: ConfigMaps, an emptyDir and the projected service-account
//     token volume (kube-api-access-*; named per ReplicaSet, not per Pod:
//     the volume comes with the create, where in a cluster ServiceAccount
//     admission adds it to each Pod after the field manager, under a name
//     of the Pod's own, as OwnTokenPod has it);
//   - the not-ready and unreachable tolerations;
//   - a running status: five conditions, three container statuses, Pod and
//     host IPs;
//   - managedFields as the API server writes them: an Update by
//     kube-controller-manager (the create: identical FieldsV1 for the Pods
//     of one ReplicaSet) and an Update of the status subresource by the
//     kubelet (its FieldsV1 names the Pod's IP, so it is the Pod's own).
//
// RealisticPodCreate and RealisticPodStatus give the two writes, for a
// test against a real server, whose field manager then writes the same
// managedFields as RealisticPod's (TestRealisticPodsMatchServer in e2e
// checks it).

// RealisticPods returns n realistic Pods of namespace over replicaSets
// ReplicaSets.
func RealisticPods(namespace string, n, replicaSets int) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = RealisticPod(namespace, i, replicaSets)
	}
	return out
}

// realisticEpoch is when the realistic Pods' ReplicaSets created them.
var realisticEpoch = time.Date(2026, 11, 2, 9, 30, 0, 0, time.UTC)

// realisticStart is when the i-th realistic Pod's containers started.
func realisticStart(i int) metav1.Time {
	return metav1.NewTime(realisticEpoch.Add(time.Duration(i)*time.Second + 4*time.Second))
}

// RealisticPod returns the i-th realistic Pod of namespace, as the API
// server returns it after RealisticPodCreate and RealisticPodStatus.
func RealisticPod(namespace string, i, replicaSets int) *corev1.Pod {
	p := RealisticPodCreate(namespace, i, replicaSets)
	return serverWritten(p, ControllerFieldsV1(p), i, replicaSets)
}

// serverWritten returns p, the i-th realistic Pod's create (as admitted),
// as the API server returns it after the create and the kubelet's status
// update; createFields is the FieldsV1 its field manager recorded for the
// create (ControllerFieldsV1 of the create as sent).
func serverWritten(p *corev1.Pod, createFields []byte, i, replicaSets int) *corev1.Pod {
	created := metav1.NewTime(realisticEpoch.Add(time.Duration(i) * time.Second))
	started := realisticStart(i)
	p.UID = types.UID(fmt.Sprintf("3f5e2a7c-%04x-4b1d-9e2f-%012x", i%replicaSets, i))
	p.ResourceVersion = strconv.Itoa(200000 + 2*i)
	p.CreationTimestamp = created
	p.Status = RealisticPodStatus(i, replicaSets)
	p.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &created,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(createFields))},
		{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &started,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(KubeletFieldsV1(p.Status))), Subresource: "status"},
	}
	// Set by the server at the create, after its field manager: the
	// generation, the QoS class, and the Priority admission plugin's
	// fields.
	p.Generation = 1
	p.Status.QOSClass = corev1.PodQOSBurstable
	p.Spec.Priority = ptr(int32(0))
	p.Spec.PreemptionPolicy = ptr(corev1.PreemptLowerPriority)
	return p
}

// ControllerFieldsV1 returns the FieldsV1 of the fields the create of p
// sets, as the API server records them for its manager: the metadata the
// ReplicaSet controller writes and the spec, set on an empty Pod.
func ControllerFieldsV1(p *corev1.Pod) []byte {
	return fieldsV1(struct {
		Metadata struct {
			GenerateName    string                  `json:"generateName,omitempty"`
			Labels          map[string]string       `json:"labels,omitempty"`
			Annotations     map[string]string       `json:"annotations,omitempty"`
			OwnerReferences []metav1.OwnerReference `json:"ownerReferences,omitempty"`
		} `json:"metadata"`
		Spec corev1.PodSpec `json:"spec"`
	}{
		Metadata: struct {
			GenerateName    string                  `json:"generateName,omitempty"`
			Labels          map[string]string       `json:"labels,omitempty"`
			Annotations     map[string]string       `json:"annotations,omitempty"`
			OwnerReferences []metav1.OwnerReference `json:"ownerReferences,omitempty"`
		}{p.GenerateName, p.Labels, p.Annotations, p.OwnerReferences},
		Spec: p.Spec,
	}, map[string]any{"metadata": map[string]any{"creationTimestamp": nil}, "spec": map[string]any{"containers": nil}})
}

// KubeletFieldsV1 returns the FieldsV1 of the kubelet's update of a Pod's
// status to s, from the status the API server set at the create (phase
// Pending, the QoS class).
func KubeletFieldsV1(s corev1.PodStatus) []byte {
	return fieldsV1(struct {
		Status corev1.PodStatus `json:"status"`
	}{s}, map[string]any{"status": map[string]any{"phase": corev1.PodPending, "qosClass": corev1.PodQOSBurstable}})
}

// realisticApps are the names of the realistic Pods' Deployments.
var realisticApps = []string{"checkout", "payments", "catalog", "search", "frontend", "cart", "accounts", "ledger"}

// replicaSetOf returns the Deployment name, the ReplicaSet's pod-template
// hash and the ReplicaSet's UID of ReplicaSet r.
func replicaSetOf(r int) (app, hash string, uid types.UID) {
	app = realisticApps[r%len(realisticApps)]
	if r >= len(realisticApps) {
		app += "-" + strconv.Itoa(r/len(realisticApps))
	}
	return app, randomName(uint64(r)*7919+17, 10), types.UID(fmt.Sprintf("9b0c1d2e-%04x-4f3a-8b5c-6d7e8f90a1b2", r))
}

// randomName returns n characters of the alphabet Kubernetes uses for
// generated names, chosen by seed.
func randomName(seed uint64, n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	h := fnv.New64a()
	fmt.Fprint(h, seed)
	x := h.Sum64()
	b := make([]byte, n)
	for j := range b {
		b[j] = alphabet[x%uint64(len(alphabet))]
		x /= uint64(len(alphabet))
		if x == 0 {
			x = seed*2654435761 + uint64(j) + 1
		}
	}
	return string(b)
}

// TokenMountPath is where ServiceAccount admission mounts a Pod's
// service-account token volume in each of its containers.
const TokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// tokenVolumePrefix begins the name ServiceAccount admission gives the
// token volume; five generated characters follow.
const tokenVolumePrefix = "kube-api-access-"

// tokenVolume returns the projected service-account token volume named
// name, as ServiceAccount admission writes it.
func tokenVolume(name string) corev1.Volume {
	mode, token := int32(420), int64(3607)
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &token, Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}}
}

// AdmitServiceAccountToken does to p what the API server's ServiceAccount
// admission plugin does to a Pod it creates whose ServiceAccount lets it
// mount a token (kubernetes plugin/pkg/admission/serviceaccount, v1.37):
// every container and init container that mounts nothing at
// TokenMountPath mounts the token volume there, read-only, after its own
// mounts; the volume is the Pod's volume whose name begins
// kube-api-access-, or, when there is none and a container mounts it, a
// projected volume named name appended to the Pod's volumes. The plugin
// names that volume kube-api-access- and five random characters; a caller
// passes them (OwnTokenVolumeName). Admission runs after the field
// manager: what it adds is in no managedFields entry.
func AdmitServiceAccountToken(p *corev1.Pod, name string) {
	has := false
	if v := TokenVolumeName(p); v != "" {
		name, has = v, true
	}
	needs := false
	mount := func(cs []corev1.Container) {
		for i := range cs {
			c := &cs[i]
			if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == TokenMountPath }) {
				c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: TokenMountPath})
				needs = true
			}
		}
	}
	mount(p.Spec.InitContainers)
	mount(p.Spec.Containers)
	if needs && !has {
		p.Spec.Volumes = append(p.Spec.Volumes, tokenVolume(name))
	}
}

// TokenVolumeName returns the name of p's service-account token volume
// (the first whose name begins kube-api-access-), or "" if it has none.
func TokenVolumeName(p *corev1.Pod) string {
	for _, v := range p.Spec.Volumes {
		if strings.HasPrefix(v.Name, tokenVolumePrefix) {
			return v.Name
		}
	}
	return ""
}

// RenameTokenVolume names p's service-account token volume, and its
// containers' mounts of it, name: to compare a Pod with one whose volume
// ServiceAccount admission named at random.
func RenameTokenVolume(p *corev1.Pod, name string) {
	old := TokenVolumeName(p)
	if old == "" {
		return
	}
	for k := range p.Spec.Volumes {
		if v := &p.Spec.Volumes[k]; v.Name == old {
			v.Name = name
		}
	}
	for c := range p.Spec.Containers {
		for m := range p.Spec.Containers[c].VolumeMounts {
			if vm := &p.Spec.Containers[c].VolumeMounts[m]; vm.Name == old {
				vm.Name = name
			}
		}
	}
}

// OwnTokenVolumeName is the name the i-th own-token Pod's token volume
// is given here: kube-api-access- and five characters of the Pod's own,
// where ServiceAccount admission draws them at random.
func OwnTokenVolumeName(i int) string {
	return tokenVolumePrefix + randomName(uint64(i)*7919+3301, 5)
}

// OwnTokenPodCreate is RealisticPodCreate without the service-account
// token volume and its mounts: the create a ReplicaSet controller sends
// in a cluster, whose ServiceAccount admission then adds them to each
// Pod under a name of the Pod's own (AdmitServiceAccountToken).
func OwnTokenPodCreate(namespace string, i, replicaSets int) *corev1.Pod {
	p := RealisticPodCreate(namespace, i, replicaSets)
	token := func(name string) bool { return strings.HasPrefix(name, tokenVolumePrefix) }
	p.Spec.Volumes = slices.DeleteFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return token(v.Name) })
	for c := range p.Spec.Containers {
		c := &p.Spec.Containers[c]
		c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return token(m.Name) })
	}
	return p
}

// OwnTokenPod is the i-th realistic Pod as a cluster with ServiceAccount
// admission writes it: created from OwnTokenPodCreate, so that the
// creating manager's managedFields entry names no token volume and is
// its ReplicaSet's, then given a token volume of its own
// (OwnTokenVolumeName) in its spec alone. Its volumes and each
// container's mounts differ from a sibling's in those five characters.
func OwnTokenPod(namespace string, i, replicaSets int) *corev1.Pod {
	p := OwnTokenPodCreate(namespace, i, replicaSets)
	fields := ControllerFieldsV1(p)
	AdmitServiceAccountToken(p, OwnTokenVolumeName(i))
	return serverWritten(p, fields, i, replicaSets)
}

// OwnTokenPods returns n OwnTokenPods of namespace.
func OwnTokenPods(namespace string, n, replicaSets int) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = OwnTokenPod(namespace, i, replicaSets)
	}
	return out
}

// RealisticServiceAccounts returns the names of the ServiceAccounts the
// realistic Pods of replicaSets ReplicaSets run as (one per Deployment),
// which a server that runs ServiceAccount admission needs before their
// creates.
func RealisticServiceAccounts(replicaSets int) []string {
	var out []string
	for r := range replicaSets {
		if app, _, _ := replicaSetOf(r); !slices.Contains(out, app) {
			out = append(out, app)
		}
	}
	return out
}

// podSuffix returns the 5 characters that end the i-th realistic Pod's name, as a ReplicaSet's
// generated names end: distinct for every i below 27^5.
func podSuffix(i int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	const n = 27 * 27 * 27 * 27 * 27
	x := (i*7919 + 104729) % n // a permutation of [0, n): 7919 is prime to 27
	b := make([]byte, 5)
	for j := range b {
		b[j] = alphabet[x%len(alphabet)]
		x /= len(alphabet)
	}
	return string(b)
}

// RealisticPodCreate returns the i-th realistic Pod as its ReplicaSet
// controller creates it, with the defaults the API server would set: no
// status, no managedFields, no UID, resourceVersion or creation time.
func RealisticPodCreate(namespace string, i, replicaSets int) *corev1.Pod {
	r := i % replicaSets
	app, hash, rsUID := replicaSetOf(r)
	rs := app + "-" + hash
	version := "v1." + strconv.Itoa(4+r%5) + ".2"
	token := tokenVolumePrefix + randomName(uint64(r)+101, 5)
	yes, no := true, false
	grace, mode := int64(30), int32(420)
	nonRoot, user := true, int64(10001)
	mounts := func(extra ...corev1.VolumeMount) []corev1.VolumeMount {
		return append(extra, corev1.VolumeMount{Name: token, ReadOnly: true, MountPath: TokenMountPath})
	}
	fieldEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}
	}
	probe := func(path string, port intstr.IntOrString, delay, period int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: port, Scheme: corev1.URISchemeHTTP}},
			InitialDelaySeconds: delay, TimeoutSeconds: 1, PeriodSeconds: period, SuccessThreshold: 1, FailureThreshold: 3,
		}
	}
	resources := func(cpu, mem, cpuLimit, memLimit string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLimit), corev1.ResourceMemory: resource.MustParse(memLimit)},
		}
	}
	restricted := &corev1.SecurityContext{
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		RunAsNonRoot:             &nonRoot,
		ReadOnlyRootFilesystem:   &yes,
		AllowPrivilegeEscalation: &no,
	}
	configMap := func(name, cm string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: cm}, DefaultMode: &mode}}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:         rs + "-" + podSuffix(i),
			GenerateName: rs + "-",
			Namespace:    namespace,
			Labels: map[string]string{
				"app":                          app,
				"app.kubernetes.io/name":       app,
				"app.kubernetes.io/instance":   app + "-prod",
				"app.kubernetes.io/component":  "backend",
				"app.kubernetes.io/part-of":    "shop",
				"app.kubernetes.io/version":    version,
				"app.kubernetes.io/managed-by": "Helm",
				"pod-template-hash":            hash,
			},
			Annotations: map[string]string{
				"checksum/config":                   fmt.Sprintf("%016x%016x%016x%016x", 0x9e3779b97f4a7c15*uint64(r+1), 0xc2b2ae3d27d4eb4f*uint64(r+1), 0x165667b19e3779f9*uint64(r+3), 0xd6e8feb86659fd93*uint64(r+5)),
				"kubectl.kubernetes.io/restartedAt": "2026-10-30T14:03:11Z",
				"prometheus.io/scrape":              "true",
				"prometheus.io/port":                "9090",
				"prometheus.io/path":                "/metrics",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs, UID: rsUID, Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				configMap("config", app+"-config"),
				configMap("envoy-config", "envoy-"+app),
				configMap("fluent-bit-config", "fluent-bit"),
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				tokenVolume(token),
			},
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.example.com/shop/" + app + ":" + version,
				Args:  []string{"serve", "--config=/etc/app/config.yaml", "--http-addr=:8080", "--grpc-addr=:9000", "--metrics-addr=:9090"},
				Ports: []corev1.ContainerPort{
					{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
					{Name: "grpc", ContainerPort: 9000, Protocol: corev1.ProtocolTCP},
					{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
				},
				Env: []corev1.EnvVar{
					fieldEnv("POD_NAME", "metadata.name"),
					fieldEnv("POD_NAMESPACE", "metadata.namespace"),
					fieldEnv("POD_IP", "status.podIP"),
					fieldEnv("NODE_NAME", "spec.nodeName"),
					{Name: "SERVICE_NAME", Value: app},
					{Name: "LOG_LEVEL", Value: "info"},
					{Name: "LOG_FORMAT", Value: "json"},
					{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://otel-collector.observability.svc.cluster.local:4317"},
					{Name: "DATABASE_URL", Value: "postgres://" + app + "@postgres.shop.svc.cluster.local:5432/" + app + "?sslmode=require"},
				},
				Resources:                resources("250m", "256Mi", "1", "512Mi"),
				VolumeMounts:             mounts(corev1.VolumeMount{Name: "config", ReadOnly: true, MountPath: "/etc/app"}, corev1.VolumeMount{Name: "data", MountPath: "/var/lib/app"}),
				LivenessProbe:            probe("/healthz", intstr.FromString("http"), 10, 10),
				ReadinessProbe:           probe("/ready", intstr.FromInt32(8080), 5, 5),
				TerminationMessagePath:   corev1.TerminationMessagePathDefault,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy:          corev1.PullIfNotPresent,
				SecurityContext:          restricted,
			}, {
				Name:  "envoy",
				Image: "docker.io/envoyproxy/envoy:v1.31.2",
				Args:  []string{"-c", "/etc/envoy/envoy.yaml", "--service-cluster", app, "--service-node", "$(POD_NAME)", "--log-level", "warn"},
				Ports: []corev1.ContainerPort{
					{Name: "proxy", ContainerPort: 15001, Protocol: corev1.ProtocolTCP},
					{Name: "envoy-health", ContainerPort: 15021, Protocol: corev1.ProtocolTCP},
					{Name: "envoy-prom", ContainerPort: 15090, Protocol: corev1.ProtocolTCP},
				},
				Env:                      []corev1.EnvVar{fieldEnv("POD_NAME", "metadata.name"), fieldEnv("POD_NAMESPACE", "metadata.namespace")},
				Resources:                resources("100m", "128Mi", "500m", "256Mi"),
				VolumeMounts:             mounts(corev1.VolumeMount{Name: "envoy-config", ReadOnly: true, MountPath: "/etc/envoy"}),
				ReadinessProbe:           probe("/healthz/ready", intstr.FromInt32(15021), 1, 2),
				TerminationMessagePath:   corev1.TerminationMessagePathDefault,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy:          corev1.PullIfNotPresent,
				SecurityContext:          restricted,
			}, {
				Name:                     "log-shipper",
				Image:                    "cr.fluentbit.io/fluent/fluent-bit:3.1.9",
				Env:                      []corev1.EnvVar{fieldEnv("NODE_NAME", "spec.nodeName"), {Name: "FLUENT_FORWARD_HOST", Value: "fluentd.logging.svc.cluster.local"}},
				Resources:                resources("50m", "64Mi", "200m", "128Mi"),
				VolumeMounts:             mounts(corev1.VolumeMount{Name: "data", ReadOnly: true, MountPath: "/var/lib/app"}, corev1.VolumeMount{Name: "fluent-bit-config", ReadOnly: true, MountPath: "/fluent-bit/etc"}),
				TerminationMessagePath:   corev1.TerminationMessagePathDefault,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy:          corev1.PullIfNotPresent,
			}},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			DNSPolicy:                     corev1.DNSClusterFirst,
			ServiceAccountName:            app,
			DeprecatedServiceAccount:      app,
			NodeName:                      fmt.Sprintf("node-%03d", i%100),
			SecurityContext:               &corev1.PodSecurityContext{RunAsUser: &user, FSGroup: &user},
			SchedulerName:                 corev1.DefaultSchedulerName,
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
			},
			EnableServiceLinks: &yes,
		},
	}
}

func ptr[T any](v T) *T { return &v }

// HarshPodCreate is RealisticPodCreate with one volume more, whose name is
// generated for each Pod (scratch-xxxxx), mounted in the app container: as
// an operator or tool that names a volume inside the create makes it, so
// that the creating manager's managedFields entry of each Pod differs from
// its siblings' in those few characters.
func HarshPodCreate(namespace string, i, replicaSets int) *corev1.Pod {
	p := RealisticPodCreate(namespace, i, replicaSets)
	name := "scratch-" + randomName(uint64(i)*104729+7, 5)
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	c := &p.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: "/scratch"})
	return p
}

// HarshPod is RealisticPod made from HarshPodCreate: its managedFields
// entries differ from its ReplicaSet siblings' by a few bytes each, the
// create's in the generated volume name, the kubelet's in the Pod's IP.
func HarshPod(namespace string, i, replicaSets int) *corev1.Pod {
	p := HarshPodCreate(namespace, i, replicaSets)
	return serverWritten(p, ControllerFieldsV1(p), i, replicaSets)
}

// HarshPods returns n HarshPods of namespace.
func HarshPods(namespace string, n, replicaSets int) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = HarshPod(namespace, i, replicaSets)
	}
	return out
}

// RealisticPodStatus returns the status the kubelet writes for the i-th
// realistic Pod once its containers have started, 4s after its creation.
func RealisticPodStatus(i, replicaSets int) corev1.PodStatus {
	started := realisticStart(i)
	r := i % replicaSets
	app, _, _ := replicaSetOf(r)
	version := "v1." + strconv.Itoa(4+r%5) + ".2"
	scheduled := metav1.NewTime(started.Add(-3 * time.Second))
	ready := metav1.NewTime(started.Add(6 * time.Second))
	podIP := fmt.Sprintf("10.%d.%d.%d", 64+i>>16&63, i>>8&255, i&255)
	hostIP := fmt.Sprintf("172.20.%d.%d", i%100/50, 10+i%100)
	cond := func(t corev1.PodConditionType, at metav1.Time) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: at}
	}
	status := func(name, image, digest string, n int) corev1.ContainerStatus {
		return corev1.ContainerStatus{
			Name:         name,
			State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			Ready:        true,
			Image:        image,
			ImageID:      image[:strings.LastIndexByte(image, ':')] + "@sha256:" + digest,
			ContainerID:  "containerd://" + fmt.Sprintf("%016x%016x%016x%016x", uint64(i+1)*0x9e3779b97f4a7c15, uint64(n+1)*0xbf58476d1ce4e5b9, uint64(i)*0x94d049bb133111eb+uint64(n), uint64(i)^0x2545f4914f6cdd1d),
			Started:      ptr(true),
			RestartCount: 0,
		}
	}
	return corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			cond("PodReadyToStartContainers", started),
			cond(corev1.PodInitialized, scheduled),
			cond(corev1.PodReady, ready),
			cond(corev1.ContainersReady, ready),
			cond(corev1.PodScheduled, scheduled),
		},
		HostIP:    hostIP,
		HostIPs:   []corev1.HostIP{{IP: hostIP}},
		PodIP:     podIP,
		PodIPs:    []corev1.PodIP{{IP: podIP}},
		StartTime: &scheduled,
		ContainerStatuses: []corev1.ContainerStatus{
			status("app", "registry.example.com/shop/"+app+":"+version, "4c7d1e0f9a3b2c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5", 0),
			status("envoy", "docker.io/envoyproxy/envoy:v1.31.2", "2f1e3d4c5b6a79880a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071", 1),
			status("log-shipper", "cr.fluentbit.io/fluent/fluent-bit:3.1.9", "8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7", 2),
		},
	}
}
