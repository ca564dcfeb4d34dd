// The editor proxy: how a browser reaches a running code-server through the service.

export { EditorProxy, type EditorProxyOptions, type ProxyObserver } from './editor-proxy.ts';
export { ForwardedPorts, forwardedUrl, type PortListener } from './forwarded-ports.ts';
export { SERVICE_COOKIE_PREFIX } from './headers.ts';
export { isEditorPath } from './route.ts';
export { routableEndpoint, type RoutingIndex } from './routable.ts';
