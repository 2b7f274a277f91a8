package informer

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is what the typed stores keep: a Kubernetes object with metadata.
// *corev1.Pod, *unstructured.Unstructured and *metav1.PartialObjectMetadata
// all satisfy it.
type Object interface {
	metav1.Object
	runtime.Object
}

// KeyFunc computes the key under which obj is stored. It must be
// deterministic and must not return an empty key.
type KeyFunc[T any] func(obj T) (string, error)

// Errors reported by the stores and queues. Each is returned wrapped, so test
// for them with errors.Is.
var (
	// ErrNilObject reports a nil object (a nil pointer T) given to a store.
	ErrNilObject = errors.New("informer: nil object")
	// ErrEmptyKey reports an object whose key is empty, such as an object
	// with no name.
	ErrEmptyKey = errors.New("informer: empty key")
	// ErrInvalidKey reports a key that SplitMetaNamespaceKey cannot split.
	ErrInvalidKey = errors.New("informer: invalid key")
	// ErrClosed is returned by Pop once the queue is closed and empty.
	ErrClosed = errors.New("informer: queue closed")
	// ErrNoSuchIndex reports a read through an index name that has no
	// IndexFunc.
	ErrNoSuchIndex = errors.New("informer: no such index")
	// ErrIndexConflict reports AddIndexers with a name already in use.
	ErrIndexConflict = errors.New("informer: index already exists")
	// ErrEmptyDeltas reports a Deltas with no Delta in it where one is needed.
	ErrEmptyDeltas = errors.New("informer: empty deltas")
)

// KeyError reports that the key of Obj could not be computed. It unwraps to
// the cause: ErrNilObject, ErrEmptyKey or the KeyFunc's own error.
type KeyError[T any] struct {
	Obj T
	Err error
}

func (e *KeyError[T]) Error() string {
	return fmt.Sprintf("informer: cannot compute the key of a %T: %v", e.Obj, e.Err)
}

func (e *KeyError[T]) Unwrap() error { return e.Err }

// TransformError reports that a transform function failed on the object
// stored under Key; it unwraps to the function's error.
type TransformError struct {
	Key string
	Err error
}

func (e *TransformError) Error() string {
	return fmt.Sprintf("informer: transform %q: %v", e.Key, e.Err)
}

func (e *TransformError) Unwrap() error { return e.Err }

// transformed applies f, if set, to the object stored under key, refusing
// a nil result.
func transformed[T any](f TransformFunc[T], key string, obj T) (T, error) {
	if f == nil {
		return obj, nil
	}
	out, err := f(obj)
	if err != nil {
		return obj, &TransformError{Key: key, Err: err}
	}
	if isNil(out) {
		return obj, &TransformError{Key: key, Err: ErrNilObject}
	}
	return out, nil
}

// MetaNamespaceKeyFunc returns "namespace/name" for a namespaced object and
// "name" for a cluster-scoped one, the keys client-go uses. It reads the
// object through the typed interface, without reflection. It returns
// ErrNilObject for a nil object and ErrEmptyKey for an object with no name.
func MetaNamespaceKeyFunc[T Object](obj T) (string, error) {
	if err := checkMetaKey(obj); err != nil {
		return "", err
	}
	name := obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + name, nil
	}
	return name, nil
}

// checkMetaKey returns the error MetaNamespaceKeyFunc returns for obj, nil
// if it has a key, without making the key.
func checkMetaKey[T Object](obj T) error {
	if isNil(obj) {
		return ErrNilObject
	}
	if obj.GetName() == "" {
		return fmt.Errorf("%w: the object has no name", ErrEmptyKey)
	}
	return nil
}

// appendObjectKey appends to dst the key MetaNamespaceKeyFunc makes of
// obj, which has one (see checkMetaKey).
func appendObjectKey[T Object](dst []byte, obj T) []byte {
	return appendMetaNamespaceKey(dst, obj.GetNamespace(), obj.GetName())
}

// appendMetaNamespaceKey appends to dst the key MetaNamespaceKeyFunc makes
// of namespace and name, for a lookup that spells it in a buffer of its
// own rather than allocating it.
func appendMetaNamespaceKey[S string | []byte](dst []byte, namespace, name S) []byte {
	if len(namespace) > 0 {
		dst = append(append(dst, namespace...), '/')
	}
	return append(dst, name...)
}

// SplitMetaNamespaceKey splits a key made by MetaNamespaceKeyFunc into its
// namespace and name. A key without a slash is a cluster-scoped name; a key
// with more than one slash is an error wrapping ErrInvalidKey.
func SplitMetaNamespaceKey(key string) (namespace, name string, err error) {
	ns, name, found := strings.Cut(key, "/")
	if !found {
		return "", key, nil
	}
	if strings.IndexByte(name, '/') >= 0 {
		return "", "", fmt.Errorf("%w: %q has more than one '/'", ErrInvalidKey, key)
	}
	return ns, name, nil
}

// keyOf computes the key of obj with f, refusing a nil object and an empty
// key. Every failure is a *KeyError[T].
func keyOf[T any](f KeyFunc[T], obj T) (string, error) {
	if isNil(obj) {
		return "", &KeyError[T]{Obj: obj, Err: ErrNilObject}
	}
	key, err := f(obj)
	if err != nil {
		return "", &KeyError[T]{Obj: obj, Err: err}
	}
	if key == "" {
		return "", &KeyError[T]{Obj: obj, Err: ErrEmptyKey}
	}
	return key, nil
}

// checkedKey is keyOf for a queue that only checks, with check, that obj
// has a key: its errors are keyOf's.
func checkedKey[T any](check func(T) error, obj T) error {
	if isNil(obj) {
		return &KeyError[T]{Obj: obj, Err: ErrNilObject}
	}
	if err := check(obj); err != nil {
		return &KeyError[T]{Obj: obj, Err: err}
	}
	return nil
}

// isNil reports whether v is nil: a nil interface, or a nil pointer, map,
// slice, func or channel inside T.
func isNil[T any](v T) bool {
	a := any(v)
	if a == nil {
		return true
	}
	switch rv := reflect.ValueOf(a); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}
