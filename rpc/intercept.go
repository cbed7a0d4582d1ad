package rpc

import "context"

// Interceptor runs around every method the server serves: method is
// "Service.Method", args and reply the method's own (pointers), and call
// runs the method with the ctx given. It may answer without calling it
// (a refusal, a forward). A package that serves RPC declares its rules
// once there instead of in each method.
type Interceptor func(ctx context.Context, method string, args, reply any, call func(context.Context) error) error

// WithInterceptor runs f around every method call, over the wire and
// in-process (Call) alike.
func WithInterceptor(f Interceptor) ServerOption {
	return func(s *Server) { s.intercept = f }
}
