package sandbox

// The Docker Engine API's request and response bodies, with the fields
// this backend sets or reads. Field names are the API's JSON names
// (docs.docker.com/reference/api/engine): a field left out decodes on
// the daemon as its zero value, as the SDK's full structs send it.

// containerConfig is the container part of a create request
// (ContainerConfig in the API).
type containerConfig struct {
	Image        string
	Cmd          []string
	Entrypoint   []string
	Env          []string
	WorkingDir   string
	User         string
	AttachStdin  bool
	AttachStdout bool
	AttachStderr bool
	OpenStdin    bool
	StdinOnce    bool
	Labels       map[string]string
}

// hostConfig is the confinement part of a create request (HostConfig).
type hostConfig struct {
	NetworkMode    string
	ReadonlyRootfs bool
	CapDrop        []string
	SecurityOpt    []string
	Init           *bool             `json:",omitempty"`
	Tmpfs          map[string]string `json:",omitempty"`
	Binds          []string
	ExtraHosts     []string
	DNS            []string        `json:"Dns"`
	Mounts         []mountSpec     `json:",omitempty"`
	Memory         int64           // bytes, 0 unlimited
	MemorySwap     int64           // memory plus swap, bytes
	NanoCPUs       int64           `json:"NanoCpus"`
	PidsLimit      *int64          // 0 or -1 unlimited
	Ulimits        []ulimit        // soft and hard limits
	DeviceRequests []deviceRequest // GPUs
}

// mountSpec is one entry of HostConfig.Mounts.
type mountSpec struct {
	Type     string `json:",omitempty"`
	Source   string `json:",omitempty"`
	Target   string `json:",omitempty"`
	ReadOnly bool   `json:",omitempty"`
}

// mountBind is the bind type of mountSpec.
const mountBind = "bind"

// ulimit is one entry of HostConfig.Ulimits.
type ulimit struct {
	Name string
	Hard int64
	Soft int64
}

// deviceRequest is one entry of HostConfig.DeviceRequests.
type deviceRequest struct {
	Driver       string
	Count        int
	DeviceIDs    []string
	Capabilities [][]string
	Options      map[string]string
}

// createRequest is the body of POST /containers/create: the container's
// configuration with HostConfig beside its fields.
type createRequest struct {
	*containerConfig
	HostConfig *hostConfig `json:",omitempty"`
}

// containerSummary is one entry of GET /containers/json.
type containerSummary struct {
	ID      string `json:"Id"`
	Names   []string
	Labels  map[string]string
	State   string
	Created int64 // Unix time
}

// stateRunning is containerSummary.State of a running container.
const stateRunning = "running"

// execConfig is the body of POST /containers/{id}/exec.
type execConfig struct {
	User         string
	AttachStdin  bool
	AttachStdout bool
	AttachStderr bool
	Env          []string
	WorkingDir   string
	Cmd          []string
}

// execInspect is the part of GET /exec/{id}/json this backend reads.
type execInspect struct {
	Running  bool
	ExitCode *int
	Pid      int
}

// waitResponse is the body of POST /containers/{id}/wait.
type waitResponse struct {
	StatusCode int64
	Error      *struct{ Message string }
}
