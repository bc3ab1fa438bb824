package sandbox

import (
	"encoding/csv"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// dockerUlimitNames are the rlimits Docker accepts in --ulimit.
var dockerUlimitNames = []string{
	"core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice",
	"nofile", "nproc", "rss", "rtprio", "rttime", "sigpending", "stack",
}

// checkUlimits reports every docker.ulimits entry Docker would refuse: an
// unknown name, a negative value other than -1 (unlimited), or a soft
// limit above the hard one.
func (d DockerSpec) checkUlimits() error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(d.Ulimits)) {
		u := d.Ulimits[name]
		switch {
		case !slices.Contains(dockerUlimitNames, name):
			errs = append(errs, fmt.Errorf("sandbox: docker.ulimits.%s: unknown limit; want one of %s", name, strings.Join(dockerUlimitNames, " ")))
		case u.Soft < -1 || u.Hard < -1:
			errs = append(errs, fmt.Errorf("sandbox: docker.ulimits.%s: soft %d hard %d: want values ≥ 0, or -1 for unlimited", name, u.Soft, u.Hard))
		case u.Hard != -1 && (u.Soft == -1 || u.Soft > u.Hard):
			errs = append(errs, fmt.Errorf("sandbox: docker.ulimits.%s: soft %d is above hard %d", name, u.Soft, u.Hard))
		}
	}
	return errors.Join(errs...)
}

// ulimits returns docker.ulimits as the Engine API wants them, sorted by
// name (nil when there are none).
func (d DockerSpec) ulimits() []ulimit {
	var out []ulimit
	for _, name := range slices.Sorted(maps.Keys(d.Ulimits)) {
		u := d.Ulimits[name]
		out = append(out, ulimit{Name: name, Soft: u.Soft, Hard: u.Hard})
	}
	return out
}

// parseGPUs turns a docker.gpus value into the device request the docker
// CLI's --gpus makes of it: comma-separated fields, a bare "all" or
// number being the count, else driver=, count=, device=, capabilities=
// and options=. Without a count or devices one GPU is asked for; the
// capabilities always include "gpu". Device ids may follow device=
// unquoted ("device=0,1"), which the CLI needs quoted.
func parseGPUs(v string) (deviceRequest, error) {
	bad := func(format string, args ...any) (deviceRequest, error) {
		return deviceRequest{}, fmt.Errorf("sandbox: docker.gpus %q: "+format, append([]any{v}, args...)...)
	}
	r := csv.NewReader(strings.NewReader(v))
	fields, err := r.Read()
	if err != nil {
		return bad("%v", err)
	}
	req := deviceRequest{Options: map[string]string{}}
	seen := map[string]bool{}
	last := ""
	for _, f := range fields {
		f = strings.TrimSpace(f)
		key, val, hasVal := strings.Cut(f, "=")
		if !hasVal {
			if n, err := gpuCount(key); err == nil && !seen["count"] {
				req.Count, seen["count"], last = n, true, "count"
				continue
			}
			if last == "device" && key != "" {
				req.DeviceIDs = append(req.DeviceIDs, key)
				continue
			}
			return bad("%q is not a count (a number or \"all\")", key)
		}
		if seen[key] {
			return bad("%s given twice", key)
		}
		seen[key], last = true, key
		switch key {
		case "driver":
			req.Driver = val
		case "count":
			if req.Count, err = gpuCount(val); err != nil {
				return bad("count %q is not a number or \"all\"", val)
			}
		case "device":
			req.DeviceIDs = append(req.DeviceIDs, strings.Split(val, ",")...)
		case "capabilities":
			req.Capabilities = [][]string{append(strings.Split(val, ","), "gpu")}
		case "options":
			for _, kv := range strings.Split(val, ",") {
				k, v, _ := strings.Cut(kv, "=")
				req.Options[k] = v
			}
		default:
			return bad("unknown key %q (want driver, count, device, capabilities or options)", key)
		}
	}
	if !seen["count"] && req.DeviceIDs == nil {
		req.Count = 1
	}
	if req.Capabilities == nil {
		req.Capabilities = [][]string{{"gpu"}}
	}
	return req, nil
}

// gpuCount parses a GPU count: "all" is -1.
func gpuCount(s string) (int, error) {
	if s == "all" {
		return -1, nil
	}
	n, err := strconv.Atoi(s)
	if err == nil && n < 0 {
		err = errors.New("negative")
	}
	return n, err
}
