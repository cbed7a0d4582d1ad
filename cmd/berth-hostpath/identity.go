package main

import (
	"context"
	"fmt"
	"os"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func (s *identityServer) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: s.cfg.Name, VendorVersion: version}, nil
}

func (s *identityServer) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: s.pluginCapabilities()}, nil
}

// Probe is ready while the root directory is a writable directory. It
// takes no lock, so it answers even while a long copy is running.
func (s *identityServer) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	if err := checkRoot(s.cfg.Root); err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

// checkRoot says why root is not usable, or nil.
func checkRoot(root string) error {
	fi, err := os.Stat(root)
	if err != nil {
		return fmt.Errorf("root directory %s is not usable: %v", root, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("root directory %s is not a directory", root)
	}
	if err := unix.Access(root, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("root directory %s is not writable: %v", root, err)
	}
	return nil
}
