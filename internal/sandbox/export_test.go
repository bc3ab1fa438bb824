package sandbox

import "encoding/json"

// CreateBody is the body of the container create request that runs r
// confined by s, as the Docker backend sends it.
func (s Spec) CreateBody(r Run) ([]byte, error) {
	cfg, hc, err := s.containerConfig(r)
	if err != nil {
		return nil, err
	}
	return json.Marshal(createRequest{cfg, hc})
}
