// Package harness runs a real etcd and kube-apiserver for end-to-end tests, as child processes of
// the test binary, and injects the faults an informer must survive.
//
// Start brings up etcd and kube-apiserver on free loopback ports (about 3 s) and returns a
// [Server] with client configs for three identities: [AdminUser] (system:masters),
// [UnprivilegedUser] (no RBAC rights) and [ThrottledUser] (cluster-admin, subject to
// [Server.Throttle]). The configs connect through a TCP proxy owned by the harness, so that
// [Server.DropConnections] can cut them. Faults:
//
//   - [Server.RestartAPIServer]: SIGTERM the API server and start it again on the same port and
//     etcd; its watch cache starts afresh, so watches from older resource versions get 410 Gone.
//   - [Server.CompactEtcd]: compact etcd to its current revision; reads from etcd at older
//     revisions get 410 Gone (PodTemplates bypass the watch cache for this; see the method).
//   - [Server.DropConnections]: close every client connection, as a network failure would.
//   - [Server.Throttle] / [Server.Unthrottle]: the server answers 429 to ThrottledUser.
//   - [Server.UnprivilegedConfig]: requests are Forbidden.
//
// The servers are built by ../hack/build-servers.sh from the versions pinned in ../tools/go.mod
// into ../.bin/. Start runs the script when the binaries are missing, but a cold build takes
// 5–9 minutes: run the script before go test.
//
// Start the servers once per test package, in TestMain, and share them across its tests:
//
//	var srv *harness.Server
//
//	func TestMain(m *testing.M) {
//		goleak.VerifyTestMain(harness.Main(m, harness.Options{}, func(s *harness.Server) { srv = s }))
//	}
//
// Tests that change the server for everyone (RestartAPIServer, Throttle, CompactEtcd) should not
// run in parallel with tests that would notice. The harness runs no controllers: namespaces are
// never finalized (create a fresh one per test and leave it), nothing is garbage-collected, and
// pods stay Pending (they need no ServiceAccount: that admission plugin is off).
// [Server.AdmittingConfig] starts a second kube-apiserver over the same etcd with the
// ServiceAccount plugin on, for Pods written as a cluster writes them: each gets a token volume
// of its own, and its ServiceAccount must exist first.
//
// Stop removes everything: children get SIGKILL through Pdeathsig if the test process dies
// first, and after Stop no goroutine of the harness is left, which goleak verifies.
package harness
