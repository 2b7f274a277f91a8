package v1alpha1

import "k8s.io/apimachinery/pkg/runtime"

// The deep copies controller-gen would generate (zz_generated.deepcopy.go in a kubebuilder
// project), written out: the specs and statuses hold no pointer, slice or map.

// DeepCopyInto copies f into out.
func (f *Fleet) DeepCopyInto(out *Fleet) {
	*out = *f
	out.TypeMeta = f.TypeMeta
	f.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
}

// DeepCopy returns a copy of f.
func (f *Fleet) DeepCopy() *Fleet {
	if f == nil {
		return nil
	}
	out := new(Fleet)
	f.DeepCopyInto(out)
	return out
}

// DeepCopyObject returns a copy of f.
func (f *Fleet) DeepCopyObject() runtime.Object {
	if c := f.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies l into out.
func (l *FleetList) DeepCopyInto(out *FleetList) {
	*out = *l
	out.TypeMeta = l.TypeMeta
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Fleet, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a copy of l.
func (l *FleetList) DeepCopy() *FleetList {
	if l == nil {
		return nil
	}
	out := new(FleetList)
	l.DeepCopyInto(out)
	return out
}

// DeepCopyObject returns a copy of l.
func (l *FleetList) DeepCopyObject() runtime.Object {
	if c := l.DeepCopy(); c != nil {
		return c
	}
	return nil
}
