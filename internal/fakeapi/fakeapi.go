// Package fakeapi is a Kubernetes API server inside a test process, enough
// for informers and their factory: discovery (unaggregated), and LIST and
// WATCH (watch-list streams included) of the resources it is told to serve,
// in JSON, in protobuf for the resources that have it, and as
// PartialObjectMetadata for metadata clients. It keeps objects in memory and
// records every request it serves. Its resource versions count as etcd's
// revisions do: 1 before the first change, which is 2, so that a LIST never
// answers "0" (a watch from "0" is an unordered replay).
package fakeapi

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	restwatch "k8s.io/client-go/rest/watch"
)

// Resource is a resource the server serves.
type Resource struct {
	// GVK is the kind of one object; its list kind is Kind+"List". Both
	// must be in the server's scheme.
	GVK schema.GroupVersionKind
	// Name is the plural resource name, such as "pods".
	Name string
	// Namespaced is whether its objects live in namespaces.
	Namespaced bool
	// Protobuf is whether the server answers in protobuf when asked, as
	// for built-in types (never for CRDs).
	Protobuf bool
}

func (r Resource) gvr() schema.GroupVersionResource { return r.GVK.GroupVersion().WithResource(r.Name) }

// Request is a request the server answered.
type Request struct {
	Path   string
	Query  url.Values
	Accept string
	// ContentType is the media type of the response, such as
	// "application/json".
	ContentType string
}

// Watch reports whether r is a watch.
func (r Request) Watch() bool { return r.Query.Get("watch") == "true" }

// event is one change to an object.
type event struct {
	typ watch.EventType
	obj runtime.Object
	rv  uint64
}

// Server is the fake API server. Its methods are safe for concurrent use.
type Server struct {
	srv    *httptest.Server
	scheme *runtime.Scheme
	codecs serializer.CodecFactory
	stop   chan struct{} // closed by Close, to end the watches
	closed sync.Once

	mu        sync.Mutex // guards the fields below
	resources map[schema.GroupVersionResource]Resource
	kinds     map[schema.GroupVersionKind]schema.GroupVersionResource // of every resource ever served
	objects   map[schema.GroupVersionResource]map[string]runtime.Object
	events    map[schema.GroupVersionResource][]event // every change, in order
	rv        uint64                                  // the last change's version; 1 before the first
	requests  []Request
	failing   map[schema.GroupVersionResource]int // status code for LIST and WATCH
	changed   chan struct{}                       // closed and replaced at every change
	held      map[string]chan struct{}            // per namespace: closed when Hold's release is called
}

// New starts a server that encodes objects with scheme and serves
// resources.
func New(scheme *runtime.Scheme, resources ...Resource) *Server {
	s := &Server{
		scheme:    scheme,
		codecs:    serializer.NewCodecFactory(scheme),
		stop:      make(chan struct{}),
		resources: make(map[schema.GroupVersionResource]Resource),
		kinds:     make(map[schema.GroupVersionKind]schema.GroupVersionResource),
		objects:   make(map[schema.GroupVersionResource]map[string]runtime.Object),
		events:    make(map[schema.GroupVersionResource][]event),
		failing:   make(map[schema.GroupVersionResource]int),
		changed:   make(chan struct{}),
		held:      make(map[string]chan struct{}),
		rv:        1,
	}
	for _, r := range resources {
		s.Serve(r)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// Config returns a *rest.Config for the server.
func (s *Server) Config() *rest.Config { return &rest.Config{Host: s.srv.URL} }

// Close ends the watches and stops the server, waiting for every request
// in progress. Later calls do nothing.
func (s *Server) Close() {
	s.closed.Do(func() {
		close(s.stop)
		s.srv.Close()
	})
}

// Serve adds r to the resources the server serves and to its discovery,
// as installing a CRD does.
func (s *Server) Serve(r Resource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resources[r.gvr()] = r
	s.kinds[r.GVK] = r.gvr()
}

// Fail makes LIST and WATCH of gvr answer with an error of the HTTP status
// code; 0 serves it again.
func (s *Server) Fail(gvr schema.GroupVersionResource, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing[gvr] = code
}

// Hold holds back the watch events of the objects of namespace until
// release is called: every watch stream, of that namespace or of all,
// stops before the first such event and goes on once released, so that a
// client's watch of one namespace lags behind its watch of another. Lists
// are not held. release may be called more than once.
func (s *Server) Hold(namespace string) (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gate := make(chan struct{})
	s.held[namespace] = gate
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.held[namespace] == gate {
				delete(s.held, namespace)
			}
			close(gate)
		})
	}
}

// gate returns the channel a watch stream waits on before sending an event
// of namespace, nil if that namespace is not held.
func (s *Server) gate(namespace string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[namespace]
}

// Requests returns the requests served so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// ResourceVersion returns the resource version of the server's last
// change.
func (s *Server) ResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strconv.FormatUint(s.rv, 10)
}

// Create adds obj, whose kind must be of a resource the server serves.
func (s *Server) Create(obj runtime.Object) error { return s.change(watch.Added, obj) }

// Update replaces the object of obj's kind, namespace and name.
func (s *Server) Update(obj runtime.Object) error { return s.change(watch.Modified, obj) }

// Delete deletes the object of obj's kind, namespace and name.
func (s *Server) Delete(obj runtime.Object) error { return s.change(watch.Deleted, obj) }

func (s *Server) change(typ watch.EventType, obj runtime.Object) error {
	gvks, _, err := s.scheme.ObjectKinds(obj)
	if err != nil {
		return err
	}
	obj = obj.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	key := m.GetNamespace() + "/" + m.GetName()
	s.mu.Lock()
	defer s.mu.Unlock()
	gvr, ok := s.kinds[gvks[0]]
	if !ok {
		return fmt.Errorf("fakeapi: %v is not served", gvks[0])
	}
	objs := s.objects[gvr]
	if objs == nil {
		objs = make(map[string]runtime.Object)
		s.objects[gvr] = objs
	}
	_, exists := objs[key]
	switch {
	case typ == watch.Added && exists:
		return fmt.Errorf("fakeapi: %s %s exists", gvr.Resource, key)
	case typ != watch.Added && !exists:
		return fmt.Errorf("fakeapi: %s %s does not exist", gvr.Resource, key)
	}
	s.rv++
	m.SetResourceVersion(strconv.FormatUint(s.rv, 10))
	if typ == watch.Deleted {
		delete(objs, key)
	} else {
		objs[key] = obj
	}
	s.events[gvr] = append(s.events[gvr], event{typ: typ, obj: obj, rv: s.rv})
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}

// handle serves every request.
func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	req := Request{Path: r.URL.Path, Query: r.URL.Query(), Accept: r.Header.Get("Accept")}
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var body any
	var gv schema.GroupVersion
	var rest []string
	switch {
	case len(segs) == 1 && segs[0] == "api":
		body = &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}
	case len(segs) == 1 && segs[0] == "apis":
		body = s.groups()
	case len(segs) == 2 && segs[0] == "api":
		body = s.resourceList(schema.GroupVersion{Version: segs[1]})
	case len(segs) == 3 && segs[0] == "apis":
		body = s.resourceList(schema.GroupVersion{Group: segs[1], Version: segs[2]})
	case len(segs) > 2 && segs[0] == "api":
		gv, rest = schema.GroupVersion{Version: segs[1]}, segs[2:]
	case len(segs) > 3 && segs[0] == "apis":
		gv, rest = schema.GroupVersion{Group: segs[1], Version: segs[2]}, segs[3:]
	}
	if body != nil {
		req.ContentType = runtime.ContentTypeJSON
		s.record(req)
		w.Header().Set("Content-Type", runtime.ContentTypeJSON)
		json.NewEncoder(w).Encode(body)
		return
	}
	var resource, namespace string
	switch {
	case len(rest) == 1:
		resource = rest[0]
	case len(rest) == 3 && rest[0] == "namespaces":
		namespace, resource = rest[1], rest[2]
	}
	s.mu.Lock()
	res, ok := s.resources[gv.WithResource(resource)]
	code := s.failing[gv.WithResource(resource)]
	s.mu.Unlock()
	switch {
	case r.Method != http.MethodGet:
		s.fail(w, req, apierrors.NewMethodNotSupported(gv.WithResource(resource).GroupResource(), r.Method))
	case !ok || (namespace != "" && !res.Namespaced):
		s.fail(w, req, apierrors.NewNotFound(gv.WithResource(resource).GroupResource(), r.URL.Path))
	case code != 0:
		s.fail(w, req, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: int32(code), Reason: metav1.StatusReason(http.StatusText(code)),
			Message: fmt.Sprintf("fakeapi: %s fails with %d", resource, code),
		}})
	case req.Query.Get("watch") == "true":
		s.serveWatch(w, r, req, res, namespace)
	default:
		s.serveList(w, req, res, namespace)
	}
}

func (s *Server) record(req Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
}

func (s *Server) fail(w http.ResponseWriter, req Request, err *apierrors.StatusError) {
	req.ContentType = runtime.ContentTypeJSON
	s.record(req)
	status := err.Status()
	status.Kind, status.APIVersion = "Status", "v1"
	w.Header().Set("Content-Type", runtime.ContentTypeJSON)
	w.WriteHeader(int(status.Code))
	json.NewEncoder(w).Encode(&status)
}

func (s *Server) groups() *metav1.APIGroupList {
	s.mu.Lock()
	defer s.mu.Unlock()
	versions := make(map[string][]string)
	for gvr := range s.resources {
		if gvr.Group != "" && !slices.Contains(versions[gvr.Group], gvr.Version) {
			versions[gvr.Group] = append(versions[gvr.Group], gvr.Version)
		}
	}
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, g := range slices.Sorted(maps.Keys(versions)) {
		group := metav1.APIGroup{Name: g}
		for _, v := range slices.Sorted(slices.Values(versions[g])) {
			group.Versions = append(group.Versions, metav1.GroupVersionForDiscovery{GroupVersion: g + "/" + v, Version: v})
		}
		group.PreferredVersion = group.Versions[0]
		list.Groups = append(list.Groups, group)
	}
	return list
}

func (s *Server) resourceList(gv schema.GroupVersion) *metav1.APIResourceList {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for gvr, r := range s.resources {
		if gvr.GroupVersion() == gv {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: r.Name, Namespaced: r.Namespaced, Kind: r.GVK.Kind,
				SingularName: strings.ToLower(r.GVK.Kind), Verbs: metav1.Verbs{"get", "list", "watch"},
			})
		}
	}
	slices.SortFunc(list.APIResources, func(a, b metav1.APIResource) int { return strings.Compare(a.Name, b.Name) })
	return list
}

// encoding is how a response encodes objects.
type encoding struct {
	mediaType string
	metadata  bool // as PartialObjectMetadata, in JSON
	info      runtime.SerializerInfo
	encoder   runtime.Encoder
}

// negotiate picks the encoding of a response to accept: the first media
// type in it that the server can send.
func (s *Server) negotiate(accept string, res Resource) encoding {
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if strings.HasPrefix(params["as"], "PartialObjectMetadata") {
			if mt == runtime.ContentTypeJSON {
				return encoding{mediaType: runtime.ContentTypeJSON, metadata: true}
			}
			continue
		}
		if mt == runtime.ContentTypeProtobuf && !res.Protobuf {
			continue
		}
		if mt == "*/*" {
			mt = runtime.ContentTypeJSON
		}
		if info, ok := runtime.SerializerInfoForMediaType(s.codecs.SupportedMediaTypes(), mt); ok && (mt == runtime.ContentTypeJSON || mt == runtime.ContentTypeProtobuf) {
			return encoding{mediaType: mt, info: info, encoder: s.codecs.WithoutConversion().EncoderForVersion(info.Serializer, res.GVK.GroupVersion())}
		}
	}
	info, _ := runtime.SerializerInfoForMediaType(s.codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	return encoding{mediaType: runtime.ContentTypeJSON, info: info, encoder: s.codecs.WithoutConversion().EncoderForVersion(info.Serializer, res.GVK.GroupVersion())}
}

// encode encodes obj, or its metadata. It encodes a copy: encoders set the
// kind of the object they encode, and watches encode the stored objects
// concurrently.
func (e encoding) encode(obj runtime.Object) ([]byte, error) {
	if e.metadata {
		return json.Marshal(partial(obj))
	}
	return runtime.Encode(e.encoder, obj.DeepCopyObject())
}

// partial returns the metadata of obj.
func partial(obj runtime.Object) *metav1.PartialObjectMetadata {
	m, _ := meta.Accessor(obj)
	return &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: metav1.ObjectMeta{
			Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), Labels: m.GetLabels(), Annotations: m.GetAnnotations(),
		},
	}
}

// snapshotLocked returns the objects of res in namespace ("" for all) sorted by
// key, and the current resource version. The caller holds mu.
func (s *Server) snapshotLocked(res Resource, namespace string) ([]runtime.Object, uint64) {
	objs := s.objects[res.gvr()]
	var out []runtime.Object
	for _, key := range slices.Sorted(maps.Keys(objs)) {
		if namespace == "" || strings.HasPrefix(key, namespace+"/") {
			out = append(out, objs[key])
		}
	}
	return out, s.rv
}

func (s *Server) serveList(w http.ResponseWriter, req Request, res Resource, namespace string) {
	enc := s.negotiate(req.Accept, res)
	s.mu.Lock()
	objs, rv := s.snapshotLocked(res, namespace)
	s.mu.Unlock()
	var data []byte
	var err error
	if enc.metadata {
		list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}}
		list.ResourceVersion = strconv.FormatUint(rv, 10)
		for _, obj := range objs {
			list.Items = append(list.Items, *partial(obj))
		}
		data, err = json.Marshal(list)
	} else {
		var list runtime.Object
		if list, err = s.scheme.New(res.GVK.GroupVersion().WithKind(res.GVK.Kind + "List")); err == nil {
			if err = meta.SetList(list, objs); err == nil {
				lm, _ := meta.ListAccessor(list)
				lm.SetResourceVersion(strconv.FormatUint(rv, 10))
				data, err = runtime.Encode(enc.encoder, list)
			}
		}
	}
	if err != nil {
		s.fail(w, req, apierrors.NewInternalError(err))
		return
	}
	req.ContentType = enc.mediaType
	s.record(req)
	w.Header().Set("Content-Type", enc.mediaType)
	w.Write(data)
}

// serveWatch streams the changes after the requested resource version
// until the client goes, or the server closes. With sendInitialEvents, or
// from resource version "" or "0", it first sends the current objects as
// ADDED events; with sendInitialEvents, then a bookmark annotated
// k8s.io/initial-events-end.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, req Request, res Resource, namespace string) {
	enc := s.negotiate(req.Accept, res)
	req.ContentType = enc.mediaType
	s.record(req)
	var frames streaming.Encoder
	if enc.metadata {
		frames = jsonStream{json.NewEncoder(w)}
	} else {
		frames = streaming.NewEncoder(enc.info.StreamSerializer.Framer.NewFrameWriter(w), enc.info.StreamSerializer.Serializer)
	}
	events := restwatch.NewEncoder(frames, encoderFunc(enc.encode))
	w.Header().Set("Content-Type", enc.mediaType+";stream=watch")
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	flush()

	gvr := res.gvr()
	initial := req.Query.Get("sendInitialEvents") == "true"
	from, _ := strconv.ParseUint(req.Query.Get("resourceVersion"), 10, 64)
	s.mu.Lock()
	var objs []runtime.Object
	rv := s.rv
	if initial || from == 0 {
		objs, rv = s.snapshotLocked(res, namespace)
		from = rv
	}
	pos, _ := slices.BinarySearchFunc(s.events[gvr], from+1, func(e event, rv uint64) int { return int(e.rv) - int(rv) })
	s.mu.Unlock()
	for _, obj := range objs {
		if events.Encode(&watch.Event{Type: watch.Added, Object: obj}) != nil {
			return
		}
	}
	if initial {
		bookmark, err := s.scheme.New(res.GVK)
		if err != nil {
			return
		}
		m, _ := meta.Accessor(bookmark)
		m.SetResourceVersion(strconv.FormatUint(rv, 10))
		m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		if events.Encode(&watch.Event{Type: watch.Bookmark, Object: bookmark}) != nil {
			return
		}
	}
	flush()
	for {
		s.mu.Lock()
		evs := s.events[gvr][pos:]
		pos += len(evs)
		changed := s.changed
		s.mu.Unlock()
		for _, e := range evs {
			m, _ := meta.Accessor(e.obj)
			if namespace != "" && m.GetNamespace() != namespace {
				continue
			}
			if gate := s.gate(m.GetNamespace()); gate != nil {
				flush()
				select {
				case <-gate:
				case <-r.Context().Done():
					return
				case <-s.stop:
					return
				}
			}
			if events.Encode(&watch.Event{Type: e.typ, Object: e.obj}) != nil {
				return
			}
		}
		flush()
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		case <-s.stop:
			return
		}
	}
}

// encoderFunc is a runtime.Encoder made of a function.
type encoderFunc func(runtime.Object) ([]byte, error)

func (f encoderFunc) Encode(obj runtime.Object, w io.Writer) error {
	data, err := f(obj)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

func (encoderFunc) Identifier() runtime.Identifier { return "fakeapi" }

// jsonStream writes watch events as a stream of JSON objects.
type jsonStream struct{ enc *json.Encoder }

func (j jsonStream) Encode(obj runtime.Object) error { return j.enc.Encode(obj) }
