package informers

import (
	"k8s.io/client-go/informers/admissionregistration"
	"k8s.io/client-go/informers/apiserverinternal"
	"k8s.io/client-go/informers/apps"
	"k8s.io/client-go/informers/autoscaling"
	"k8s.io/client-go/informers/batch"
	"k8s.io/client-go/informers/certificates"
	"k8s.io/client-go/informers/coordination"
	"k8s.io/client-go/informers/core"
	"k8s.io/client-go/informers/discovery"
	"k8s.io/client-go/informers/events"
	"k8s.io/client-go/informers/extensions"
	"k8s.io/client-go/informers/flowcontrol"
	"k8s.io/client-go/informers/networking"
	"k8s.io/client-go/informers/node"
	"k8s.io/client-go/informers/policy"
	"k8s.io/client-go/informers/rbac"
	"k8s.io/client-go/informers/resource"
	"k8s.io/client-go/informers/scheduling"
	"k8s.io/client-go/informers/storage"
	"k8s.io/client-go/informers/storagemigration"
)

// The group accessors of client-go's SharedInformerFactory: each calls the
// generated group constructor with the factory, its namespace and tweak,
// so every generated typed informer comes through InformerFor.

// Admissionregistration returns the informers of the admissionregistration API group.
func (f *Factory) Admissionregistration() admissionregistration.Interface {
	return admissionregistration.New(f, f.namespace, f.tweak)
}

// Internal returns the informers of the apiserverinternal API group.
func (f *Factory) Internal() apiserverinternal.Interface {
	return apiserverinternal.New(f, f.namespace, f.tweak)
}

// Apps returns the informers of the apps API group.
func (f *Factory) Apps() apps.Interface { return apps.New(f, f.namespace, f.tweak) }

// Autoscaling returns the informers of the autoscaling API group.
func (f *Factory) Autoscaling() autoscaling.Interface {
	return autoscaling.New(f, f.namespace, f.tweak)
}

// Batch returns the informers of the batch API group.
func (f *Factory) Batch() batch.Interface { return batch.New(f, f.namespace, f.tweak) }

// Certificates returns the informers of the certificates API group.
func (f *Factory) Certificates() certificates.Interface {
	return certificates.New(f, f.namespace, f.tweak)
}

// Coordination returns the informers of the coordination API group.
func (f *Factory) Coordination() coordination.Interface {
	return coordination.New(f, f.namespace, f.tweak)
}

// Core returns the informers of the core API group.
func (f *Factory) Core() core.Interface { return core.New(f, f.namespace, f.tweak) }

// Discovery returns the informers of the discovery API group.
func (f *Factory) Discovery() discovery.Interface { return discovery.New(f, f.namespace, f.tweak) }

// Events returns the informers of the events API group.
func (f *Factory) Events() events.Interface { return events.New(f, f.namespace, f.tweak) }

// Extensions returns the informers of the extensions API group.
func (f *Factory) Extensions() extensions.Interface { return extensions.New(f, f.namespace, f.tweak) }

// Flowcontrol returns the informers of the flowcontrol API group.
func (f *Factory) Flowcontrol() flowcontrol.Interface {
	return flowcontrol.New(f, f.namespace, f.tweak)
}

// Networking returns the informers of the networking API group.
func (f *Factory) Networking() networking.Interface { return networking.New(f, f.namespace, f.tweak) }

// Node returns the informers of the node API group.
func (f *Factory) Node() node.Interface { return node.New(f, f.namespace, f.tweak) }

// Policy returns the informers of the policy API group.
func (f *Factory) Policy() policy.Interface { return policy.New(f, f.namespace, f.tweak) }

// Rbac returns the informers of the rbac API group.
func (f *Factory) Rbac() rbac.Interface { return rbac.New(f, f.namespace, f.tweak) }

// Resource returns the informers of the resource API group.
func (f *Factory) Resource() resource.Interface { return resource.New(f, f.namespace, f.tweak) }

// Scheduling returns the informers of the scheduling API group.
func (f *Factory) Scheduling() scheduling.Interface { return scheduling.New(f, f.namespace, f.tweak) }

// Storage returns the informers of the storage API group.
func (f *Factory) Storage() storage.Interface { return storage.New(f, f.namespace, f.tweak) }

// Storagemigration returns the informers of the storagemigration API group.
func (f *Factory) Storagemigration() storagemigration.Interface {
	return storagemigration.New(f, f.namespace, f.tweak)
}
