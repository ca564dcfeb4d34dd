// The EditorServerTemplate resource: one YAML file per template in the templates folder, shaped
// like a Kubernetes object. `gallery` is how clients show it, `spec` what a server made from it gets.
import type { RestartPolicy } from '../manifests/types.ts';

export const TEMPLATE_KIND = 'EditorServerTemplate';
/** Annotations of a manifest made from a template: which template, and which version of its file. */
export const TEMPLATE_ANNOTATION = 'devbox.dev/template';
export const TEMPLATE_VERSION_ANNOTATION = 'devbox.dev/template-version';

export interface TemplateGallery {
  name: string;
  description?: string;
  tab: string;
  thumbnailUrl?: string;
  githubUrl?: string;
  iconLinks?: Array<{ lucideIcon: string; url: string }>;
}

/** A template's workspace source: a git repository, or a ZIP inside the templates folder. */
export interface TemplateSource {
  git?: { url: string; ref?: string; depth?: number };
  /** Relative to the templates folder. */
  archive?: { path: string };
}

/** The EditorServer spec fields a template gives (all but displayName, running and port). */
export interface TemplateSpec {
  restartPolicy?: RestartPolicy;
  extensionGroups?: string[];
  extensions?: string[];
  settings?: Record<string, unknown>;
  workspace?: { source?: TemplateSource };
}

export interface EditorServerTemplate {
  apiVersion: 'devbox.dev/v1alpha1';
  kind: typeof TEMPLATE_KIND;
  metadata: { name: string; annotations?: Record<string, string>; labels?: Record<string, string> };
  gallery: TemplateGallery;
  spec: TemplateSpec;
}

/** A valid template as the catalog holds it. */
export interface CatalogTemplate {
  /** metadata.name, which is the file name without .yaml. */
  id: string;
  /** The file name in the templates folder. */
  file: string;
  /** The first 12 hex digits of the sha256 of the file's bytes. */
  version: string;
  template: EditorServerTemplate;
}
