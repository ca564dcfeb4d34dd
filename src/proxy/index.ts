// The editor proxy: how a browser reaches a running code-server through the service.

export { EditorProxy, isEditorPath, SERVICE_COOKIE_PREFIX, type EditorProxyOptions, type ProxyObserver } from './editor-proxy.ts';
