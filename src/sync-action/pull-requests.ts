/**
 * The GitHub calls of the sync action, behind a small interface: the action needs the default
 * branch, its pull requests, their labels and a comment. Tests use the Octokit implementation
 * against a fake API, or their own.
 */
import type { GitHubClient } from '../github/client.js';

/** The parts of a pull request the action reads. */
export interface PullRequest {
  number: number;
  /** The page on GitHub (`html_url`). */
  url: string;
  title: string;
  body: string;
  /** The head branch's name, and `owner:branch` (GitHub's `head.label`). */
  headRef: string;
  headLabel: string;
  labels: string[];
}

export interface PullRequestApi {
  /** The repository's default branch. */
  defaultBranch(): Promise<string>;
  /** Open pull requests, all of them or those whose head is `head` (`owner:branch`). */
  openPulls(head?: string): Promise<PullRequest[]>;
  createPull(input: { title: string; body: string; head: string; base: string }): Promise<PullRequest>;
  /** Changes the title and body, or closes it. */
  updatePull(number: number, input: { title?: string; body?: string; state?: 'closed' }): Promise<PullRequest>;
  /** Adds labels (GitHub creates a label the repository does not have yet); removes one. */
  addLabels(number: number, labels: string[]): Promise<void>;
  removeLabel(number: number, label: string): Promise<void>;
  comment(number: number, body: string): Promise<void>;
}

interface PullJson {
  number: number;
  html_url: string;
  title: string;
  body?: string | null;
  head: { ref: string; label: string };
  labels: ({ name?: string } | string)[];
}

function pullRequest(json: PullJson): PullRequest {
  return {
    number: json.number,
    url: json.html_url,
    title: json.title,
    body: json.body ?? '',
    headRef: json.head.ref,
    headLabel: json.head.label,
    labels: json.labels.map((label) => (typeof label === 'string' ? label : (label.name ?? ''))),
  };
}

/** The API through an Octokit (`createGitHubClient`) for `owner/repo`. */
export function octokitPullRequestApi(octokit: GitHubClient, owner: string, repo: string): PullRequestApi {
  return {
    defaultBranch: async () => (await octokit.rest.repos.get({ owner, repo })).data.default_branch,
    openPulls: async (head) => {
      const pulls = await octokit.paginate(octokit.rest.pulls.list, { owner, repo, state: 'open', per_page: 100, ...(head ? { head } : {}) });
      return pulls.map(pullRequest);
    },
    createPull: async (input) => pullRequest((await octokit.rest.pulls.create({ owner, repo, ...input })).data),
    updatePull: async (number, input) => pullRequest((await octokit.rest.pulls.update({ owner, repo, pull_number: number, ...input })).data),
    addLabels: async (number, labels) => {
      await octokit.rest.issues.addLabels({ owner, repo, issue_number: number, labels });
    },
    removeLabel: async (number, label) => {
      try {
        await octokit.rest.issues.removeLabel({ owner, repo, issue_number: number, name: label });
      } catch (error) {
        // Already gone (removed by hand): what was wanted.
        if ((error as { status?: number }).status !== 404) throw error;
      }
    },
    comment: async (number, body) => {
      await octokit.rest.issues.createComment({ owner, repo, issue_number: number, body });
    },
  };
}
