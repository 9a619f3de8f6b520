package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	contourv1 "github.com/portcullis/portcullis/apis/projectcontour/v1"
)

// ExtensionProtocolVersion is the version of the GRPC protocol used
// to access extension services. The only version that is currently
// supported is "v3".
type ExtensionProtocolVersion string

const (
	// SupportProtocolVersion3 requests the "v3" support protocol version.
	SupportProtocolVersion3 ExtensionProtocolVersion = "v3"
)

// ExtensionServiceTarget defines an Kubernetes Service to target with
// extension service traffic.
type ExtensionServiceTarget struct {
	// Name is the name of Kubernetes service that will accept service
	// traffic.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Port (defined as Integer) to proxy traffic to since a service can have multiple defined.
	//
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int `json:"port"`

	// Weight defines proportion of traffic to balance to the Kubernetes Service.
	//
	// +optional
	Weight uint32 `json:"weight,omitempty"`
}

// ExtensionServiceSpec defines the desired state of an ExtensionService resource.
type ExtensionServiceSpec struct {
	// Services specifies the set of Kubernetes Service resources that
	// receive GRPC extension API requests.
	// If no weights are specified for any of the entries in
	// this array, traffic will be spread evenly across all the
	// services.
	// Otherwise, traffic is balanced proportionally to the
	// Weight field in each entry.
	//
	// +required
	// +kubebuilder:validation:MinItems=1
	Services []ExtensionServiceTarget `json:"services"`

	// UpstreamValidation defines how to verify the backend service's certificate
	//
	// +optional
	UpstreamValidation *contourv1.UpstreamValidation `json:"validation,omitempty"`

	// Protocol may be used to specify (or override) the protocol used to reach this Service.
	// Values may be h2 or h2c. If omitted, protocol-selection falls back on Service annotations.
	//
	// +optional
	// +kubebuilder:validation:Enum=h2;h2c
	Protocol *string `json:"protocol,omitempty"`

	// The policy for load balancing GRPC service requests. Note that the
	// `Cookie` and `RequestHash` load balancing strategies cannot be used
	// here.
	//
	// +optional
	LoadBalancerPolicy *contourv1.LoadBalancerPolicy `json:"loadBalancerPolicy,omitempty"`

	// The timeout policy for requests to the services.
	//
	// +optional
	TimeoutPolicy *contourv1.TimeoutPolicy `json:"timeoutPolicy,omitempty"`

	// This field sets the version of the GRPC protocol that Envoy uses to
	// send requests to the extension service. Since Contour always uses the
	// v3 Envoy API, this is currently fixed at "v3". However, other
	// protocol options will be available in future.
	//
	// +optional
	// +kubebuilder:validation:Enum=v3
	ProtocolVersion ExtensionProtocolVersion `json:"protocolVersion,omitempty"`

	// CircuitBreakerPolicy overrides the global circuit breaker limits for
	// the extension service's cluster.
	//
	// +optional
	CircuitBreakerPolicy *CircuitBreakers `json:"circuitBreakerPolicy,omitempty"`

	// HealthCheckPolicy, when set, makes Envoy check the services'
	// endpoints actively with the gRPC health checking protocol
	// (grpc.health.v1.Health/Check) and send requests only to healthy ones.
	// This is a Portcullis extension of the Contour API.
	//
	// +optional
	HealthCheckPolicy *GRPCHealthCheckPolicy `json:"healthCheckPolicy,omitempty"`
}

// CircuitBreakers are the limits of one Envoy towards a cluster.
type CircuitBreakers struct {
	// MaxConnections to the cluster; Envoy's default is 1024.
	//
	// +optional
	MaxConnections uint32 `json:"maxConnections,omitempty"`

	// MaxPendingRequests waiting for a connection; Envoy's default is 1024.
	//
	// +optional
	MaxPendingRequests uint32 `json:"maxPendingRequests,omitempty"`

	// MaxRequests in flight; Envoy's default is 1024.
	//
	// +optional
	MaxRequests uint32 `json:"maxRequests,omitempty"`

	// MaxRetries in flight; Envoy's default is 3.
	//
	// +optional
	MaxRetries uint32 `json:"maxRetries,omitempty"`

	// PerHostMaxConnections to each endpoint of the cluster.
	//
	// +optional
	PerHostMaxConnections uint32 `json:"perHostMaxConnections,omitempty"`
}

// GRPCHealthCheckPolicy configures Envoy's active gRPC health checks of an
// ExtensionService's endpoints.
type GRPCHealthCheckPolicy struct {
	// ServiceName is the service name sent in each HealthCheckRequest.
	// Empty asks about the server as a whole.
	//
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// IntervalSeconds is the time between checks of one endpoint.
	// Defaults to 5.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	IntervalSeconds int64 `json:"intervalSeconds,omitempty"`

	// TimeoutSeconds is how long Envoy waits for an answer. Defaults to 2.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	TimeoutSeconds int64 `json:"timeoutSeconds,omitempty"`

	// UnhealthyThresholdCount is the number of failed checks after which an
	// endpoint is taken out of rotation. Defaults to 3.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	UnhealthyThresholdCount uint32 `json:"unhealthyThresholdCount,omitempty"`

	// HealthyThresholdCount is the number of successful checks after which
	// an endpoint is put back in rotation. Defaults to 2.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	HealthyThresholdCount uint32 `json:"healthyThresholdCount,omitempty"`
}

// ExtensionServiceStatus defines the observed state of an
// ExtensionService resource.
type ExtensionServiceStatus struct {
	// Conditions contains the current status of the ExtensionService resource.
	//
	// Contour will update a single condition, `Valid`, that is in normal-true polarity.
	//
	// Contour will not modify any other Conditions set in this block,
	// in case some other controller wants to add a Condition.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []contourv1.DetailedCondition `json:"conditions,omitempty"`

	// ClusterName is the name of the Envoy cluster generated for this
	// ExtensionService ("extension/<namespace>/<name>").
	//
	// +optional
	ClusterName string `json:"clusterName,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,path=extensionservices,singular=extensionservice,shortName=extensionservice;extensionservices
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Valid",type="string",JSONPath=`.status.conditions[?(@.type=="Valid")].status`
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".status.clusterName"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"

// ExtensionService is the schema for the Contour extension services API.
// An ExtensionService resource binds a network service to the Contour
// API so that Contour API features can be implemented by collaborating
// components.
type ExtensionService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ExtensionServiceSpec `json:"spec,omitempty"`

	// +optional
	Status ExtensionServiceStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ExtensionServiceList contains a list of ExtensionService resources.
type ExtensionServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ExtensionService `json:"items"`
}
