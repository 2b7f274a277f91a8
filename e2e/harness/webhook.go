package harness

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// holdWebhook is a validating admission webhook, served by the harness on a loopback port, that
// holds every request it is sent until it is released or holdFor passes, then allows it. The API
// server sends it only the hold requests of the throttler: dry-run creates of ConfigMaps labelled
// holdLabel in throttleNamespace.
type holdWebhook struct {
	srv   *http.Server
	serve sync.WaitGroup // the Serve goroutine

	mu      sync.Mutex
	release <-chan struct{} // guarded by mu; held requests return when it is closed
}

// startHoldWebhook serves the webhook with a fresh self-signed certificate and registers it, with
// its namespace, in the API server. The configuration reaches the server's admission chain a
// moment later; the throttler's hold loop copes with that.
func startHoldWebhook(ctx context.Context, admin kubernetes.Interface) (*holdWebhook, error) {
	certPEM, cert, err := selfSignedLoopbackCert()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("harness: webhook listen: %w", err)
	}
	closed := make(chan struct{})
	close(closed)
	wh := &holdWebhook{release: closed}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hold", wh.hold)
	wh.srv = &http.Server{
		Handler:           mux,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}},
		ReadHeaderTimeout: 10 * time.Second,
	}
	wh.serve.Go(func() { wh.srv.ServeTLS(ln, "", "") })

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: throttleNamespace}}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		wh.close()
		return nil, fmt.Errorf("harness: create namespace %s: %w", throttleNamespace, err)
	}
	url := "https://" + ln.Addr().String() + "/hold"
	timeout := int32(30)
	fail := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: throttleWebhook},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         throttleWebhook,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: certPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"},
				},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: throttleNamespace}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{holdLabel: "true"}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	whc := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := whc.Create(ctx, cfg, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		// Left by an earlier harness on the same etcd: point it at this server.
		var old *admissionregistrationv1.ValidatingWebhookConfiguration
		if old, err = whc.Get(ctx, throttleWebhook, metav1.GetOptions{}); err == nil {
			cfg.ResourceVersion = old.ResourceVersion
			_, err = whc.Update(ctx, cfg, metav1.UpdateOptions{})
		}
		if err != nil {
			wh.close()
			return nil, fmt.Errorf("harness: update webhook configuration: %w", err)
		}
	} else if err != nil {
		wh.close()
		return nil, fmt.Errorf("harness: create webhook configuration: %w", err)
	}
	return wh, nil
}

// setRelease makes the requests held from now on wait for ch.
func (wh *holdWebhook) setRelease(ch <-chan struct{}) {
	wh.mu.Lock()
	wh.release = ch
	wh.mu.Unlock()
}

// hold answers an AdmissionReview with "allowed" once released, after holdFor, or when the API
// server gives up on the call.
func (wh *holdWebhook) hold(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "harness: want an AdmissionReview", http.StatusBadRequest)
		return
	}
	wh.mu.Lock()
	release := wh.release
	wh.mu.Unlock()
	timer := time.NewTimer(holdFor)
	defer timer.Stop()
	select {
	case <-release:
	case <-timer.C:
	case <-r.Context().Done():
		return
	}
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(&review)
}

// close stops the server and waits for its Serve goroutine. Held requests must have been released.
func (wh *holdWebhook) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := wh.srv.Shutdown(ctx); err != nil {
		wh.srv.Close()
	}
	wh.serve.Wait()
}

// selfSignedLoopbackCert makes a self-signed serving certificate for 127.0.0.1, which is its own CA.
func selfSignedLoopbackCert() ([]byte, tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("harness: webhook key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("harness: webhook certificate serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "harness hold webhook"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("harness: webhook certificate: %w", err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	if cert.Leaf, err = x509.ParseCertificate(der); err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("harness: webhook certificate: %w", err)
	}
	return certPEM, cert, nil
}
