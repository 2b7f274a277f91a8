package harness

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

func TestServerVersion(t *testing.T) {
	cs := clientFor(t, srv.AdminConfig())
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != "v1.37.1" || v.Major != "1" || v.Minor != "37" {
		t.Errorf("server version = %s (major %q, minor %q), want v1.37.1", v.GitVersion, v.Major, v.Minor)
	}
}

func TestConfigMapsCreateListWatch(t *testing.T) {
	ctx := testContext(t, 30*time.Second)
	cs := clientFor(t, srv.AdminConfig())
	ns := newNamespace(t, cs)
	for _, name := range []string{"a", "b", "c"} {
		createConfigMap(t, cs, ns, name)
	}
	list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(list.Items) != 3 {
		t.Fatalf("list has %d items, want 3", len(list.Items))
	}

	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	d := createConfigMap(t, cs, ns, "d")
	d.Data["changed"] = "yes"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update: %v", err)
	}
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	want := []string{"ADDED d", "MODIFIED d", "DELETED a"}
	for _, w0 := range want {
		ev := nextEvent(t, w, 10*time.Second)
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if !ok {
			t.Fatalf("event %s, want %s", objectName(ev), w0)
		}
		if got := string(ev.Type) + " " + cm.Name; got != w0 {
			t.Fatalf("event %s, want %s", got, w0)
		}
	}
}

func TestUnprivilegedIsForbidden(t *testing.T) {
	ctx := testContext(t, 30*time.Second)
	cs := clientFor(t, srv.UnprivilegedConfig())
	_, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("unprivileged list of pods: err = %v, want Forbidden", err)
	}
	// It is authenticated all the same: discovery is open to every authenticated user.
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		t.Fatalf("unprivileged discovery: %v", err)
	}
}

func TestWatchListStreaming(t *testing.T) {
	ctx := testContext(t, 30*time.Second)
	cs := clientFor(t, srv.AdminConfig())
	ns := newNamespace(t, cs)
	want := map[string]bool{"a": true, "b": true, "c": true}
	for name := range want {
		createConfigMap(t, cs, ns, name)
	}
	sendInitialEvents := true
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    &sendInitialEvents,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	})
	if err != nil {
		t.Fatalf("watch-list: %v", err)
	}
	defer w.Stop()
	for {
		ev := nextEvent(t, w, 10*time.Second)
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if !ok {
			t.Fatalf("event %s, want ConfigMap events", objectName(ev))
		}
		switch ev.Type {
		case watch.Added:
			if !want[cm.Name] {
				t.Fatalf("unexpected or repeated ADDED %s", cm.Name)
			}
			delete(want, cm.Name)
		case watch.Bookmark:
			if cm.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
				continue // a progress bookmark before the end of the initial events
			}
			if len(want) != 0 {
				t.Fatalf("initial-events-end bookmark before ADDED for %v", want)
			}
			if cm.ResourceVersion == "" {
				t.Fatal("initial-events-end bookmark without resourceVersion")
			}
			return
		default:
			t.Fatalf("unexpected event %s", objectName(ev))
		}
	}
}

func TestDropConnectionsEndsWatch(t *testing.T) {
	ctx := testContext(t, 30*time.Second)
	cs := clientFor(t, srv.AdminConfig())
	ns := newNamespace(t, cs)
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	if n := srv.DropConnections(); n == 0 {
		t.Fatal("DropConnections closed no connection, want the watch's")
	}
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				// The client reconnects for the next request.
				if _, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil {
					t.Fatalf("list after DropConnections: %v", err)
				}
				return
			}
			t.Logf("event after DropConnections: %s", objectName(ev))
		case <-timer.C:
			t.Fatal("watch still open 10s after DropConnections")
		}
	}
}

func TestCompactEtcdExpiresOldWatch(t *testing.T) {
	ctx := testContext(t, 30*time.Second)
	cs := clientFor(t, srv.AdminConfig())
	ns := newNamespace(t, cs)
	// PodTemplates bypass the watch cache (see CompactEtcd): their watches read etcd.
	templates := cs.CoreV1().PodTemplates(ns)
	var rvs []string
	for _, name := range []string{"a", "b", "c"} {
		pt, err := templates.Create(ctx, &corev1.PodTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}},
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create podtemplate: %v", err)
		}
		rvs = append(rvs, pt.ResourceVersion)
	}

	// Before compaction, a watch from the first object's version replays the two later ones.
	w, err := templates.Watch(ctx, metav1.ListOptions{ResourceVersion: rvs[0]})
	if err != nil {
		t.Fatalf("watch before compaction: %v", err)
	}
	if ev := nextEvent(t, w, 10*time.Second); ev.Type != watch.Added {
		t.Fatalf("watch before compaction: event %s, want ADDED b", objectName(ev))
	}
	w.Stop()

	rev, err := srv.CompactEtcd(ctx)
	if err != nil {
		t.Fatalf("CompactEtcd: %v", err)
	}
	if last, _ := strconv.ParseInt(rvs[2], 10, 64); rev < last {
		t.Fatalf("CompactEtcd returned revision %d, older than the last write %d", rev, last)
	}

	w, err = templates.Watch(ctx, metav1.ListOptions{ResourceVersion: rvs[0]})
	expectGone(t, "watch after compaction", w, err)
}

func TestRestartAPIServerKeepsData(t *testing.T) {
	ctx := testContext(t, 90*time.Second)
	cs := clientFor(t, srv.AdminConfig())
	ns := newNamespace(t, cs)
	first := createConfigMap(t, cs, ns, "before-restart")
	createConfigMap(t, cs, ns, "later")
	url := srv.URL()

	if err := srv.RestartAPIServer(ctx); err != nil {
		t.Fatalf("RestartAPIServer: %v", err)
	}
	if srv.URL() != url {
		t.Errorf("URL changed across restart: %s, then %s", url, srv.URL())
	}
	got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, first.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get after restart: %v", err)
	}
	if got.UID != first.UID {
		t.Fatalf("after restart the configmap has UID %s, want %s", got.UID, first.UID)
	}

	// The new watch cache starts at etcd's revision at the restart: older versions are gone.
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	expectGone(t, "watch from before the restart", w, err)
}

// TestRestartWithOpenWatches restarts the API server while watches are open, through the proxy
// and straight to the server: the server closes them and the restart takes seconds, not the 30 s
// after which stop kills it.
func TestRestartWithOpenWatches(t *testing.T) {
	ctx := testContext(t, 90*time.Second)
	proxied := clientFor(t, srv.AdminConfig())
	cfg := srv.AdminConfig()
	cfg.Host = srv.APIServerURL()
	direct := clientFor(t, cfg)
	ns := newNamespace(t, proxied)
	var watches []watch.Interface
	for _, cs := range []kubernetes.Interface{proxied, direct} {
		for _, open := range []func() (watch.Interface, error){
			func() (watch.Interface, error) { return cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{}) },
			func() (watch.Interface, error) { return cs.CoreV1().PodTemplates(ns).Watch(ctx, metav1.ListOptions{}) },
		} {
			w, err := open()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			watches = append(watches, w)
		}
	}
	start := time.Now()
	if err := srv.RestartAPIServer(ctx); err != nil {
		t.Fatalf("RestartAPIServer with %d watches open: %v", len(watches), err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("RestartAPIServer with watches open took %v, want seconds", d)
	}
	for i, w := range watches {
		for ev := range w.ResultChan() {
			t.Logf("watch %d: %s", i, objectName(ev))
		}
	}
}

func TestThrottleGives429(t *testing.T) {
	ctx := testContext(t, 60*time.Second)
	throttled := clientFor(t, srv.ThrottledConfig())
	admin := clientFor(t, srv.AdminConfig())
	ns := newNamespace(t, admin)
	t.Cleanup(func() {
		if err := srv.Unthrottle(t.Context()); err != nil {
			t.Error(err)
		}
	})

	// Unthrottled, the identity may do anything.
	if _, err := throttled.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list before Throttle: %v", err)
	}
	w, err := throttled.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch before Throttle: %v", err)
	}
	defer w.Stop()
	if err := srv.Throttle(ctx); err != nil {
		t.Fatalf("Throttle: %v", err)
	}
	// A watch opened before goes on.
	createConfigMap(t, admin, ns, "while-throttled")
	if ev := nextEvent(t, w, 10*time.Second); ev.Type != watch.Added {
		t.Fatalf("watch opened before Throttle: event %s, want ADDED", objectName(ev))
	}
	if err := srv.Throttle(ctx); err == nil {
		t.Error("second Throttle succeeded, want an error")
	}
	// MaxRetries(0): client-go would otherwise retry a 429 with Retry-After up to 10 times.
	rc := throttled.CoreV1().RESTClient()
	err = rc.Get().Namespace(ns).Resource("configmaps").MaxRetries(0).Do(ctx).Error()
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("throttled list: err = %v, want 429", err)
	}
	_, err = rc.Get().Namespace(ns).Resource("configmaps").Param("watch", "true").MaxRetries(0).Watch(ctx)
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("throttled watch: err = %v, want 429", err)
	}
	if _, err := admin.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("admin list while throttled: %v", err)
	}

	if err := srv.Unthrottle(ctx); err != nil {
		t.Fatalf("Unthrottle: %v", err)
	}
	if err := rc.Get().Namespace(ns).Resource("configmaps").MaxRetries(0).Do(ctx).Error(); err != nil {
		t.Fatalf("list after Unthrottle: %v", err)
	}
}

// The admitting server runs the ServiceAccount admission plugin over the same etcd: a Pod created
// through it needs its ServiceAccount and is given a token volume of its own, mounted in each
// container, that no managedFields entry names; the first server, without the plugin, serves that
// Pod and creates Pods as they are sent.
func TestAdmittingServerMountsServiceAccountToken(t *testing.T) {
	ctx := testContext(t, 90*time.Second)
	cfg, err := srv.AdmittingConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	adm, cs := clientFor(t, cfg), clientFor(t, srv.AdminConfig())
	ns := newNamespace(t, cs)
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
				Containers:     []corev1.Container{{Name: "app", Image: "busybox"}},
			},
		}
	}
	if _, err := adm.CoreV1().Pods(ns).Create(ctx, pod("before"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("create a Pod with no ServiceAccount in its namespace: %v, want Forbidden", err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created, err := adm.CoreV1().Pods(ns).Create(ctx, pod("admitted"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().Pods(ns).Get(ctx, "admitted", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != created.ResourceVersion {
		t.Errorf("the first server serves resourceVersion %s, the admitting one created %s", got.ResourceVersion, created.ResourceVersion)
	}
	if len(got.Spec.Volumes) != 1 || !strings.HasPrefix(got.Spec.Volumes[0].Name, "kube-api-access-") || got.Spec.Volumes[0].Projected == nil {
		t.Fatalf("admitted Pod's volumes: %+v, want one projected kube-api-access- volume", got.Spec.Volumes)
	}
	name := got.Spec.Volumes[0].Name
	for _, c := range append(got.Spec.InitContainers, got.Spec.Containers...) {
		if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != name || c.VolumeMounts[0].MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" {
			t.Errorf("container %s mounts %+v, want %s at the token's path", c.Name, c.VolumeMounts, name)
		}
	}
	if got.Spec.ServiceAccountName != "default" {
		t.Errorf("admitted Pod runs as %q, want default", got.Spec.ServiceAccountName)
	}
	for _, m := range got.ManagedFields {
		if strings.Contains(m.FieldsV1.GetRawString(), "kube-api-access-") {
			t.Errorf("managedFields of %s names the token volume: %s", m.Manager, m.FieldsV1.GetRawString())
		}
	}
	plain, err := cs.CoreV1().Pods(ns).Create(ctx, pod("plain"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Spec.Volumes) != 0 {
		t.Errorf("a Pod created through the first server has volumes %+v, want none", plain.Spec.Volumes)
	}
}

func TestStopLeavesNothing(t *testing.T) {
	ctx := testContext(t, 90*time.Second)
	s, err := Start(ctx, Options{Output: io.Discard})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if _, err := s.AdmittingConfig(ctx); err != nil {
		t.Fatalf("AdmittingConfig: %v", err)
	}
	s.mu.Lock()
	pids := map[string]int{"kube-apiserver": s.api.proc.pid(), "etcd": s.etcd.proc.pid(), "the admitting kube-apiserver": s.admitting.proc.pid()}
	s.mu.Unlock()
	tempDir := s.tempDir

	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	for name, pid := range pids {
		// Each child leads a process group of its own; signal 0 to the group finds any member.
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s's process group %d after Stop: kill(0) = %v, want ESRCH", name, pid, err)
		}
	}
	if _, err := os.Stat(tempDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp dir %s after Stop: %v, want it removed", tempDir, err)
	}
	if err := s.RestartAPIServer(ctx); err == nil {
		t.Error("RestartAPIServer after Stop succeeded, want an error")
	}
	if _, err := s.AdmittingConfig(ctx); err == nil {
		t.Error("AdmittingConfig after Stop succeeded, want an error")
	}
}

func TestStartFailureReportsLogAndCleansUp(t *testing.T) {
	ctx := testContext(t, 60*time.Second)
	logDir := t.TempDir()
	_, err := Start(ctx, Options{Output: io.Discard, LogDir: logDir, APIServerArgs: []string{"--no-such-flag"}})
	if err == nil {
		t.Fatal("Start with an unknown kube-apiserver flag succeeded")
	}
	// The error says what happened and quotes the server's own complaint from its log.
	for _, want := range []string{"harness: kube-apiserver exited", "unknown flag: --no-such-flag"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start error lacks %q:\n%v", want, err)
		}
	}
	// etcd had started; Start stopped it again (its log says it ran).
	if tail := fileTail(filepath.Join(logDir, "etcd.log"), 100); !strings.Contains(tail, "### harness") {
		t.Errorf("etcd.log does not show an etcd start:\n%s", tail)
	}
}

// TestStartOnTakenPortTriesAnother: a kube-apiserver whose port was taken between freePorts and
// its listen (another listener, or an outgoing connection's local port) is started again on
// another port; after startAttempts such starts, the error says so.
func TestStartOnTakenPortTriesAnother(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	certDir, logDir := t.TempDir(), t.TempDir()
	srv.mu.Lock()
	bin := srv.api.bin
	srv.mu.Unlock()
	// mk makes the server of each attempt, on the taken port for the first takenStarts.
	mk := func(takenStarts int, attempts *int) func(port int) *apiServer {
		return func(port int) *apiServer {
			*attempts++
			if *attempts <= takenStarts {
				port = takenPort
			}
			return &apiServer{
				bin:     bin,
				args:    apiServerArgs(port, certDir, srv.etcd.clientURL, srv.fileFlags),
				logPath: filepath.Join(logDir, "kube-apiserver.log"),
				url:     "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
				certDir: certDir,
				admin:   srv.admin,
			}
		}
	}

	var attempts int
	api, err := startAPIServer(ctx, 60*time.Second, mk(1, &attempts))
	if err != nil {
		t.Fatalf("start after a taken port: %v", err)
	}
	if err := api.stop(30 * time.Second); err != nil {
		t.Error(err)
	}
	if attempts != 2 || api.url == "https://127.0.0.1:"+strconv.Itoa(takenPort) {
		t.Errorf("%d attempts, the server at %s (taken: %d); want 2, on another port", attempts, api.url, takenPort)
	}

	attempts = 0
	_, err = startAPIServer(ctx, 60*time.Second, mk(startAttempts, &attempts))
	if !errors.Is(err, errPortTaken) || !strings.Contains(err.Error(), "address already in use") || attempts != startAttempts {
		t.Errorf("%d attempts on a taken port: %v; want %d, errPortTaken quoting the server's log", attempts, err, startAttempts)
	}
}
