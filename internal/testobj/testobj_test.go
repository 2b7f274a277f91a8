package testobj

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestBenchPodSize(t *testing.T) {
	b, err := json.Marshal(BenchPod(12345, 100))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(b); n < 1300 || n > 1800 {
		t.Errorf("BenchPod is %d bytes of JSON, want about 1.5 KB", n)
	}
}

// Realistic Pods are about 10 KB of protobuf, about half of it
// managedFields; the Pods of one ReplicaSet have the same FieldsV1 for the
// controller's create, another ReplicaSet's differ, and the kubelet's are
// each Pod's own.
func TestRealisticPods(t *testing.T) {
	pods := RealisticPods("shop", 60, 20)
	for _, p := range pods[:3] {
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var mf int
		for _, m := range p.ManagedFields {
			mf += len(m.FieldsV1.GetRawBytes())
		}
		if n := len(b); n < 9000 || n > 13000 || mf < n*2/5 {
			t.Errorf("pod %s: %d bytes of protobuf, %d of FieldsV1; want about 10 KB, about half of it FieldsV1", p.Name, n, mf)
		}
	}
	raw := func(i, entry int) string { return pods[i].ManagedFields[entry].FieldsV1.GetRawString() }
	if raw(0, 0) != raw(20, 0) || raw(0, 0) != raw(40, 0) {
		t.Error("the Pods of one ReplicaSet have different FieldsV1 for the create")
	}
	if raw(0, 0) == raw(1, 0) {
		t.Error("the Pods of two ReplicaSets have the same FieldsV1 for the create")
	}
	if raw(0, 1) == raw(20, 1) {
		t.Error("two Pods have the same FieldsV1 for the kubelet's update")
	}
	if pods[0].OwnerReferences[0].Name == pods[1].OwnerReferences[0].Name {
		t.Error("two ReplicaSets have one name")
	}
	names := map[string]bool{}
	for i := range 50000 {
		p := RealisticPodCreate("shop", i, 20)
		if names[p.Name] {
			t.Fatalf("pod %d has the name of another: %s", i, p.Name)
		}
		names[p.Name] = true
	}
}

// An own-token Pod is a realistic Pod whose token volume ServiceAccount
// admission named for it: its creating manager's FieldsV1 names no token
// volume and stays its ReplicaSet's, its spec has the volume under a name
// of its own, and with that name put back it is the realistic Pod but for
// that FieldsV1.
func TestOwnTokenPods(t *testing.T) {
	pods := OwnTokenPods("shop", 60, 20)
	raw := func(i int) string { return pods[i].ManagedFields[0].FieldsV1.GetRawString() }
	if raw(0) != raw(20) || raw(0) != raw(40) {
		t.Error("the own-token Pods of one ReplicaSet have different FieldsV1 for the create")
	}
	if strings.Contains(raw(0), tokenVolumePrefix) {
		t.Errorf("the create's FieldsV1 names the token volume: %s", raw(0))
	}
	seen := map[string]bool{}
	for i, p := range pods {
		name := OwnTokenVolumeName(i)
		if seen[name] {
			t.Fatalf("pod %d's token volume has another's name %s", i, name)
		}
		seen[name] = true
		v := p.Spec.Volumes[len(p.Spec.Volumes)-1]
		if v.Name != name || v.Projected == nil {
			t.Fatalf("pod %d's last volume is %s, want the projected %s", i, v.Name, name)
		}
		for _, c := range p.Spec.Containers {
			if m := c.VolumeMounts[len(c.VolumeMounts)-1]; m.Name != name || m.MountPath != TokenMountPath || !m.ReadOnly {
				t.Errorf("pod %d, container %s: last mount %+v, want %s read-only at %s", i, c.Name, m, name, TokenMountPath)
			}
		}
		// Named as the realistic Pod names it, it is the realistic Pod
		// but for the create's FieldsV1.
		want := RealisticPod("shop", i, 20)
		RenameTokenVolume(p, TokenVolumeName(want))
		p.ManagedFields[0].FieldsV1 = want.ManagedFields[0].FieldsV1
		if d := cmp.Diff(want, p); d != "" {
			t.Fatalf("pod %d differs from RealisticPod but for its token volume's name (-want +got):\n%s", i, d)
		}
	}
}

// AdmitServiceAccountToken adds what the ServiceAccount admission plugin
// adds: a mount in each container, init containers too, that mounts
// nothing at the token's path, and the volume when one of them needs it
// and the Pod has no kube-api-access- volume of its own.
func TestAdmitServiceAccountToken(t *testing.T) {
	mount := func(name string) corev1.VolumeMount {
		return corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: TokenMountPath}
	}
	other := corev1.VolumeMount{Name: "data", MountPath: "/data"}
	own := corev1.VolumeMount{Name: "mine", MountPath: TokenMountPath}
	emptyDir := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	for _, tc := range []struct {
		name string
		in   corev1.PodSpec
		want corev1.PodSpec
	}{
		{"no containers", corev1.PodSpec{}, corev1.PodSpec{}},
		{"containers and init containers",
			corev1.PodSpec{
				Volumes:        []corev1.Volume{emptyDir},
				InitContainers: []corev1.Container{{Name: "init"}},
				Containers:     []corev1.Container{{Name: "a", VolumeMounts: []corev1.VolumeMount{other}}, {Name: "b"}},
			},
			corev1.PodSpec{
				Volumes:        []corev1.Volume{emptyDir, tokenVolume("kube-api-access-abcde")},
				InitContainers: []corev1.Container{{Name: "init", VolumeMounts: []corev1.VolumeMount{mount("kube-api-access-abcde")}}},
				Containers: []corev1.Container{
					{Name: "a", VolumeMounts: []corev1.VolumeMount{other, mount("kube-api-access-abcde")}},
					{Name: "b", VolumeMounts: []corev1.VolumeMount{mount("kube-api-access-abcde")}},
				},
			}},
		{"every container mounts something at the path",
			corev1.PodSpec{Containers: []corev1.Container{{Name: "a", VolumeMounts: []corev1.VolumeMount{own}}}},
			corev1.PodSpec{Containers: []corev1.Container{{Name: "a", VolumeMounts: []corev1.VolumeMount{own}}}}},
		{"a token volume already there",
			corev1.PodSpec{
				Volumes:    []corev1.Volume{tokenVolume("kube-api-access-zzzzz")},
				Containers: []corev1.Container{{Name: "a", VolumeMounts: []corev1.VolumeMount{own}}, {Name: "b"}},
			},
			corev1.PodSpec{
				Volumes: []corev1.Volume{tokenVolume("kube-api-access-zzzzz")},
				Containers: []corev1.Container{
					{Name: "a", VolumeMounts: []corev1.VolumeMount{own}},
					{Name: "b", VolumeMounts: []corev1.VolumeMount{mount("kube-api-access-zzzzz")}},
				},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: tc.in}
			AdmitServiceAccountToken(p, "kube-api-access-abcde")
			if d := cmp.Diff(tc.want, p.Spec); d != "" {
				t.Errorf("admitted spec (-want +got):\n%s", d)
			}
		})
	}
}

func TestRealisticServiceAccounts(t *testing.T) {
	got := RealisticServiceAccounts(20)
	want := map[string]bool{}
	for i := range 20 {
		want[RealisticPodCreate("shop", i, 20).Spec.ServiceAccountName] = true
	}
	if len(got) != len(want) {
		t.Fatalf("%d ServiceAccounts %v, want the %d the Pods run as", len(got), got, len(want))
	}
	for _, sa := range got {
		if !want[sa] {
			t.Errorf("ServiceAccount %s: no Pod runs as it", sa)
		}
	}
}
