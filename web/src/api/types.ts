// The API's shapes under the names the dashboard uses: each is a type of openapi-types.ts, which
// `npm run gen:api-types` generates from the service's OpenAPI document, so a shape the service
// changes changes here too (and the dashboard's code that reads it stops compiling).
import type * as api from './openapi-types.ts';

/** One server, as GET /servers and the watch stream give it. */
export type ServerRecord = api.ServerRecord;
/** The record's status word. */
export type StatusWord = api.ServerRecord['status'];
export type Condition = api.Condition;
export type Resources = api.Resources;
export type PersistenceState = api.PersistenceState;
/** One message of GET /servers?watch=1. */
export type WatchEvent = api.WatchEvent;
/** One of a server's recent events (GET /servers/{id}/events). */
export type ServerEvent = api.ServerEvents['data']['events'][number];

/** The body of POST /servers. */
export type CreateBody = api.CreateServer;
/** What the create routes answer. */
export type CreatedServer = api.CreatedServer;
/** What start, stop and restart answer. */
export type LifecycleAnswer = api.LifecycleEnvelope;
export type DeleteAnswer = api.Deleted;
export type RefreshResult = api.RefreshResult;
export type RefreshAllAnswer = api.RefreshAll;
/** GET /health: the fixed fields, then one section per part of the service that reports. */
export type ServiceHealth = api.ServiceHealth;
export type SnapshotTaken = api.SnapshotTaken;

/** GET /templates. */
export type TemplatesAnswer = api.Templates;
export type TemplateTab = api.Templates['data']['tabs'][number];
export type TemplateItem = api.Template;
/** A template or config file that could not be read: where, and what is wrong. */
export type FileProblem = api.FileProblem;

/** GET /config. */
export type ConfigAnswer = api.Config;
export type ServiceConfig = api.Config['data'];
