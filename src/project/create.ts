/**
 * Creates a project from a registry template: find the entry, download and verify its archive,
 * load the template, collect the answers, generate the project (with its lock file), and tell
 * the registry how the generation went.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { downloadTemplate, sendAnalyticsEvent, type EventDelivery, type ProvenanceOutcome, type ProvenancePolicy, type RegistryClient } from '../client/index.js';
import type { TemplateEntry, TemplateManifest } from '../core/schema-types.js';
import { registrySource } from '../template/lock.js';
import { generateProject, loadTemplate, type Answers, type GenerateResult, type LoadedTemplate } from '../template/index.js';
import { givenAnswers, type GivenAnswers } from './answers.js';
import { TemplateNotFoundError } from './errors.js';

export interface CreateProjectOptions extends GivenAnswers {
  /** The registry to read; its `registryUrl` is recorded as the project's source and takes the generation event. */
  client: RegistryClient;
  /** The template id. */
  id: string;
  /** The version; the one the registry selects for `id` (newest stable, else newest) unless given. */
  version?: string;
  /** The folder to create the project in; a folder named after the template id unless given. */
  dir?: string;
  /**
   * Asks for the answers still missing, given those given up front (the CLI prompts on a
   * terminal); without it, every answer not given takes its default.
   */
  ask?: (template: LoadedTemplate, given: Answers) => Promise<Answers>;
  /** Write into a folder that is not empty. */
  force?: boolean;
  /** Send no generation event: the user asked not to be tracked (the CLI passes `DO_NOT_TRACK=1`). */
  doNotTrack?: boolean;
  /** Download progress; `total` is the archive's size when known. */
  onProgress?: (received: number, total?: number) => void;
  /** For the download and the event. */
  fetch?: typeof globalThis.fetch;
  /** The clock, for the event's timestamp and duration. */
  now?: () => Date;
  /** How the template's build provenance is checked (default `warn`, the public-good root); the signer of a verified one is pinned in the lock. */
  provenance?: Omit<ProvenancePolicy, 'pinned' | 'acceptNewSigner'>;
}

export interface CreateProjectResult {
  /** The registry entry the project was generated from. */
  entry: TemplateEntry;
  /** The generated project: folder, answers, files and lock file. */
  project: GenerateResult;
  /** The template's manifest, as the archive held it (its `nextSteps`, for one, is for the person who created the project). */
  manifest: TemplateManifest;
  /** What became of the generation event. */
  event: EventDelivery;
  /** What the provenance check found. */
  provenance: ProvenanceOutcome;
}

/**
 * Creates a project from the template `id` (at `version`) of the registry `client` reads.
 *
 * The archive is downloaded into a temp folder (removed in the end) and checked against the
 * entry's integrity before anything is unpacked. Answers are `answers`, then `answersFile`, then
 * `set`, then what `ask` adds. Once the template is loaded, a generation event (success or
 * failure, with its duration) goes to the registry unless `doNotTrack`; it never fails the
 * creation. Throws TemplateNotFoundError, the download's errors (DownloadError, IntegrityError,
 * UnsafeArchiveError), TemplateLoadError, AnswersFileError, AnswersError, what `ask` throws, and
 * OutputNotEmptyError.
 */
export async function createProject(options: CreateProjectOptions): Promise<CreateProjectResult> {
  const { client, id } = options;
  const now = options.now ?? (() => new Date());
  const entry = await client.getTemplate(id, options.version);
  if (!entry) throw new TemplateNotFoundError(id, options.version);

  const report = (success: boolean, started: number): Promise<EventDelivery> => {
    const at = now();
    return sendAnalyticsEvent(
      client.registryUrl,
      { type: 'generation', templateId: id, version: entry.version, success, duration: at.getTime() - started, timestamp: at.toISOString() },
      { doNotTrack: options.doNotTrack ?? false, ...(options.fetch ? { fetch: options.fetch } : {}) },
    );
  };

  const work = await mkdtemp(path.join(tmpdir(), 'template-create-'));
  const started = now().getTime();
  let loaded = false;
  try {
    const downloaded = await downloadTemplate(entry, path.join(work, 'template'), {
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
      documentUrl: client.registryUrl,
      ...(options.provenance ? { provenance: options.provenance } : {}),
    });
    const template = await loadTemplate(downloaded.dir);
    loaded = true;
    let answers = await givenAnswers(template, options);
    if (options.ask) answers = await options.ask(template, answers);
    const project = await generateProject(template, options.dir ?? id, answers, {
      force: options.force ?? false,
      source: registrySource(client.registryUrl, id, entry.version),
      ...(downloaded.provenance.status === 'verified' ? { signer: downloaded.provenance.signer } : {}),
    });
    return { entry, project, manifest: template.manifest, event: await report(true, started), provenance: downloaded.provenance };
  } catch (error) {
    // Only a template that could be used counts as a generation; a failed download is not one.
    if (loaded) await report(false, started);
    throw error;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
