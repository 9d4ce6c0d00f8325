/**
 * Whether a parsed validation pattern can make a backtracking matcher (JavaScript's, and most
 * others a template's consumer may use) take exponential time on some answer.
 *
 * A backtracking matcher tries every way the pattern can match a prefix of the text before it
 * gives up; it takes exponential time exactly when some part of the pattern can go round a loop
 * in two different ways over the same text (exponential degree of ambiguity). The pattern becomes
 * a position automaton whose transitions are counted with multiplicity (each way a repetition or
 * a concatenation joins two positions is a transition of its own, so `(a+)+` has two `a -> a`), and
 * the automaton is ambiguous in that way exactly when, in its product with itself, a strongly
 * connected component holds a pair (p, p) and either a pair (p, q) with p != q or a step taken by
 * two different transitions (Weber and Seidl; Allauzen, Mohri and Rastogi). Polynomial ambiguity
 * (`^[^@]+@[^@]+\.[^@]+$`) is accepted: answers are bounded and run by a linear-time engine.
 *
 * Counted repetitions are expanded into copies while the automaton stays small; beyond that every
 * `{n,m}` with m > 1 is judged as the unbounded loop it is part of, which can only find more
 * ambiguity, never less. Assertions (`^`, `$`, `\b`) are read as matching the empty text anywhere,
 * which can only find more too.
 */
import { overlaps, type CharSet, type PatternNode } from './pattern-syntax.js';

type RepeatNode = Extract<PatternNode, { kind: 'repeat' }>;

/** Positions the counted repetitions may be expanded into before they are judged as loops. */
const MAX_EXPANDED_POSITIONS = 300;
/** Steps of the product search before a pattern is refused as too complex to judge (about a tenth of a second). */
export const MAX_ANALYSIS_STEPS = 250_000;
/** A pattern with a text it can match in 2^this many ways (or more) is refused, loop or not. */
const MAX_AMBIGUITY_DOUBLINGS = 10;

export type AmbiguityVerdict =
  | { kind: 'linear-or-polynomial' }
  /** `repetition` is the part of the source that can match the same text in two ways. */
  | { kind: 'exponential'; repetition: { start: number; end: number } | undefined; doublings?: number }
  | { kind: 'too-complex' };

/** Ways, capped at 2: only "none", "one" and "more than one" matter. */
const cap = (n: number): number => Math.min(2, n);

type Counts = Map<number, number>;

interface Fragment {
  first: Counts;
  last: Counts;
  /** Ways of matching the empty text (capped). */
  nullable: number;
}

interface Transition {
  count: number;
  /** The repetitions whose loops made this transition (a concatenation makes one with none). */
  loops: RepeatNode[];
}

const addCounts = (into: Counts, from: Counts, times = 1): void => {
  if (times === 0) return;
  for (const [position, ways] of from) into.set(position, cap((into.get(position) ?? 0) + ways * times));
};

const union = (...parts: [Counts, number][]): Counts => {
  const out: Counts = new Map();
  for (const [counts, times] of parts) addCounts(out, counts, times);
  return out;
};

class PositionAutomaton {
  readonly sets: CharSet[] = [];
  /** The repetitions around each position, outermost first. */
  readonly enclosing: RepeatNode[][] = [];
  readonly follow: Map<number, Transition>[] = [];

  constructor(private readonly expand: boolean) {}

  build(node: PatternNode, around: RepeatNode[] = []): Fragment {
    switch (node.kind) {
      case 'chars': {
        const position = this.sets.length;
        this.sets.push(node.set);
        this.enclosing.push(around);
        this.follow.push(new Map());
        const only: Counts = new Map([[position, 1]]);
        return { first: only, last: only, nullable: 0 };
      }
      case 'assertion':
        return { first: new Map(), last: new Map(), nullable: 1 };
      case 'group':
        return this.build(node.body, around);
      case 'sequence':
        return node.items.reduce<Fragment>((left, item) => this.concat(left, this.build(item, around)), { first: new Map(), last: new Map(), nullable: 1 });
      case 'alternation': {
        const options = node.options.map((option) => this.build(option, around));
        return {
          first: union(...options.map((o): [Counts, number] => [o.first, 1])),
          last: union(...options.map((o): [Counts, number] => [o.last, 1])),
          nullable: cap(options.reduce((sum, o) => sum + o.nullable, 0)),
        };
      }
      case 'repeat':
        return this.repeat(node, [...around, node]);
    }
  }

  private repeat(node: RepeatNode, around: RepeatNode[]): Fragment {
    const copy = (): Fragment => this.build(node.body, around);
    const empty: Fragment = { first: new Map(), last: new Map(), nullable: 1 };
    const bounded = node.max !== Infinity && (this.expand || node.max <= 1);
    if (!bounded) {
      // n mandatory copies, the last of them the loop's first turn (x{n,} = x{n-1} x+); judged
      // without expansion, x{n,m} is x+ (n >= 1) or x* (n = 0).
      const mandatory = this.expand ? Math.max(node.min, 1) - 1 : 0;
      let head = empty;
      for (let i = 0; i < mandatory; i++) head = this.concat(head, copy());
      return this.concat(head, this.loop(copy(), node, node.min >= 1));
    }
    let fragment = empty;
    for (let i = 0; i < node.min; i++) fragment = this.concat(fragment, copy());
    // The optional turns nest, x{0,2} = (x(x)?)?, and none of them may match the empty text (a turn
    // past the minimum that matches nothing is not taken).
    let optional = empty;
    for (let i = node.max - node.min; i > 0; i--) {
      const turn = copy();
      const taken = this.concat({ ...turn, nullable: 0 }, optional);
      optional = { first: taken.first, last: taken.last, nullable: 1 };
    }
    return this.concat(fragment, optional);
  }

  /** A loop over `body`: its last positions lead back to its first; a turn past the first may not be empty. */
  private loop(body: Fragment, node: RepeatNode, firstTurnMandatory: boolean): Fragment {
    this.join(body.last, body.first, node);
    return { first: body.first, last: body.last, nullable: firstTurnMandatory ? body.nullable : 1 };
  }

  private concat(left: Fragment, right: Fragment): Fragment {
    this.join(left.last, right.first, undefined);
    return {
      first: union([left.first, 1], [right.first, left.nullable]),
      last: union([right.last, 1], [left.last, right.nullable]),
      nullable: cap(left.nullable * right.nullable),
    };
  }

  private join(from: Counts, to: Counts, loop: RepeatNode | undefined): void {
    for (const [p, waysFrom] of from) {
      const transitions = this.follow[p] as Map<number, Transition>;
      for (const [q, waysTo] of to) {
        const transition = transitions.get(q) ?? { count: 0, loops: [] };
        transition.count = cap(transition.count + waysFrom * waysTo);
        if (loop && transition.loops.length < 2) transition.loops.push(loop);
        transitions.set(q, transition);
      }
    }
  }
}

/** Positions the automaton of `node` has with every counted repetition expanded (capped past `limit`). */
function expandedPositions(node: PatternNode, limit: number): number {
  const capped = (n: number): number => Math.min(n, limit + 1);
  switch (node.kind) {
    case 'chars':
      return 1;
    case 'assertion':
      return 0;
    case 'group':
      return expandedPositions(node.body, limit);
    case 'sequence':
      return capped(node.items.reduce((sum, item) => capped(sum + expandedPositions(item, limit)), 0));
    case 'alternation':
      return capped(node.options.reduce((sum, option) => capped(sum + expandedPositions(option, limit)), 0));
    case 'repeat': {
      const copies = node.max === Infinity ? Math.max(node.min, 1) : node.max;
      return capped(copies * expandedPositions(node.body, limit));
    }
  }
}

/**
 * The product of the automaton with itself, explored from every pair (p, p): a strongly connected
 * component holding (p, p) and any other pair (or a step two transitions take) is exponential
 * ambiguity; otherwise the components form a DAG, and the most "meetings" (a step from a pair
 * (p, q), p != q, back to a pair (r, r)) on one path of it, k, means one text has at least 2^k ways
 * (the two paths' k detours combine freely), which counted repetitions make large (`(a|a){1,30}`).
 */
function judge(automaton: PositionAutomaton, maxSteps: number, spent: { steps: number }): AmbiguityVerdict {
  const n = automaton.sets.length;
  const pairs = n * n;
  const targets = automaton.follow.map((transitions) => Int32Array.from(transitions.keys()));
  const overlap = new Int8Array(pairs); // 0 not yet known, 1 overlapping, 2 disjoint
  const meet = (p: number, q: number): boolean => {
    if (p === q) return true;
    const key = p * n + q;
    if (overlap[key] === 0) overlap[key] = overlaps(automaton.sets[p] as CharSet, automaton.sets[q] as CharSet) ? 1 : 2;
    return overlap[key] === 1;
  };
  const parallel = (p: number, q: number): Transition | undefined => {
    const transition = automaton.follow[p]?.get(q);
    return transition && transition.count >= 2 ? transition : undefined;
  };
  let steps = 0;
  // Nodes are pairs p * n + q, numbered in the order they are found; the successors of the node
  // numbered k are edges[edgeStart[k]] to edges[edgeStart[k + 1]] (filled when it is found).
  const index = new Int32Array(pairs).fill(-1);
  const lowlink: number[] = [];
  const edgeStart: number[] = [];
  const edges: number[] = [];
  const addSuccessors = (node: number): void => {
    const from = targets[Math.floor(node / n)] as Int32Array;
    const to = targets[node % n] as Int32Array;
    edgeStart.push(edges.length);
    for (let i = 0; i < from.length; i++) {
      const p2 = from[i] as number;
      for (let j = 0; j < to.length; j++) {
        const q2 = to[j] as number;
        if (meet(p2, q2)) edges.push(p2 * n + q2);
      }
    }
    steps += 1 + from.length * to.length;
  };

  // Tarjan's strongly connected components, iterative; each is found after every one it reaches.
  const onStack = new Uint8Array(pairs);
  const stack: number[] = [];
  // Components in the order found: members[componentStart[c]] to members[componentStart[c + 1]].
  const members: number[] = [];
  const componentStart: number[] = [];
  const componentOf = new Int32Array(pairs);
  const workOrder: number[] = [];
  const workAt: number[] = [];
  const enter = (node: number): void => {
    const order = lowlink.length;
    index[node] = order;
    lowlink.push(order);
    addSuccessors(node);
    stack.push(node);
    onStack[node] = 1;
    workOrder.push(order);
    workAt.push(edgeStart[order] as number);
  };
  const nodeOf: number[] = [];
  for (let root = 0; root < n; root++) {
    const start = root * n + root;
    if (index[start] !== -1) continue;
    nodeOf.push(start);
    enter(start);
    while (workOrder.length > 0) {
      spent.steps = steps;
      if (steps > maxSteps) return { kind: 'too-complex' };
      const top = workOrder.length - 1;
      const order = workOrder[top] as number;
      const at = workAt[top] as number;
      const end = edgeStart[order + 1] ?? edges.length;
      if (at < end) {
        const next = edges[at] as number;
        workAt[top] = at + 1;
        if (index[next] === -1) {
          nodeOf.push(next);
          enter(next);
        } else if (onStack[next] === 1) lowlink[order] = Math.min(lowlink[order] as number, index[next] as number);
        continue;
      }
      workOrder.pop();
      workAt.pop();
      const parent = workOrder[workOrder.length - 1];
      if (parent !== undefined) lowlink[parent] = Math.min(lowlink[parent] as number, lowlink[order] as number);
      if (lowlink[order] === order) {
        const self = nodeOf[order] as number;
        componentStart.push(members.length);
        let member: number;
        do {
          member = stack.pop() as number;
          onStack[member] = 0;
          componentOf[member] = componentStart.length - 1;
          members.push(member);
        } while (member !== self);
      }
    }
  }

  const around = (positions: number[]): RepeatNode[] => innermostCommon(positions.map((p) => automaton.enclosing[p] ?? []));
  const componentCount = componentStart.length;
  const componentMembers = (c: number): number[] => members.slice(componentStart[c], componentStart[c + 1] ?? members.length);
  for (let c = 0; c < componentCount; c++) {
    const component = componentMembers(c);
    let diagonal = false;
    let offDiagonal = false;
    for (const node of component) {
      if (Math.floor(node / n) === node % n) diagonal = true;
      else offDiagonal = true;
    }
    if (!diagonal) continue;
    if (offDiagonal) {
      return { kind: 'exponential', repetition: span(around(component.flatMap((node) => [Math.floor(node / n), node % n])).at(-1)) };
    }
    // Only pairs (p, p): ambiguous when a step between two of them can be taken by two transitions.
    for (const node of component) {
      const p = node % n;
      for (const q of targets[p] ?? []) {
        const twice = componentOf[q * n + q] === componentOf[node] && index[q * n + q] !== -1 ? parallel(p, q) : undefined;
        if (twice) return { kind: 'exponential', repetition: span(outermost(twice.loops)) };
      }
    }
  }

  // No exponential ambiguity: the components form a DAG, found sinks first. The most meetings on a
  // path from each, and the step that starts that path (to name the repetition afterwards).
  const meetingsFrom = new Int32Array(componentCount);
  const bestStep: ([number, number] | undefined)[] = [];
  const meets = (node: number, next: number): boolean => {
    const p = Math.floor(node / n);
    const p2 = Math.floor(next / n);
    return p2 === next % n && (p !== node % n || parallel(p, p2) !== undefined);
  };
  let worst = -1;
  for (let c = 0; c < componentCount; c++) {
    const last = componentStart[c + 1] ?? members.length;
    for (let m = componentStart[c] as number; m < last; m++) {
      const node = members[m] as number;
      const order = index[node] as number;
      const end = edgeStart[order + 1] ?? edges.length;
      for (let at = edgeStart[order] as number; at < end; at++) {
        const next = edges[at] as number;
        const d = componentOf[next] as number;
        if (d === c) continue;
        const meetings = (meetingsFrom[d] as number) + (meets(node, next) ? 1 : 0);
        if (meetings > (meetingsFrom[c] as number)) {
          meetingsFrom[c] = meetings;
          bestStep[c] = [node, next];
        }
      }
    }
    if (worst < 0 || (meetingsFrom[c] as number) > (meetingsFrom[worst] as number)) worst = c;
  }
  const doublings = worst < 0 ? 0 : (meetingsFrom[worst] as number);
  if (doublings < MAX_AMBIGUITY_DOUBLINGS) return { kind: 'linear-or-polynomial' };
  // Named: the outermost counted repetition around every meeting (its copies are where they combine).
  const positions: number[] = [];
  for (let step = bestStep[worst]; step; step = bestStep[componentOf[step[1]] as number]) {
    const [node, next] = step;
    if (meets(node, next)) positions.push(Math.floor(node / n), node % n, Math.floor(next / n));
  }
  const shared = around(positions);
  const counted = shared.find((node) => node.max !== Infinity && node.max > 1) ?? shared.at(-1);
  return { kind: 'exponential', repetition: span(counted), doublings };
}

const span = (node: RepeatNode | undefined): { start: number; end: number } | undefined => (node ? { start: node.start, end: node.end } : undefined);

function commonPrefix(a: RepeatNode[], b: RepeatNode[]): RepeatNode[] {
  let length = 0;
  while (length < a.length && length < b.length && a[length] === b[length]) length++;
  return a.slice(0, length);
}

/** The repetitions around every one of these positions (given by theirs), outermost first. */
function innermostCommon(enclosings: RepeatNode[][]): RepeatNode[] {
  return enclosings.reduce((common, list) => commonPrefix(common, list), enclosings[0] ?? []);
}

/** Of the repetitions that each made a transition, the one around the others (the widest). */
function outermost(loops: RepeatNode[]): RepeatNode | undefined {
  return [...loops].sort((a, b) => b.end - b.start - (a.end - a.start))[0];
}

/**
 * Judges a parsed pattern (see the module's comment) in at most `maxSteps` steps of the product
 * search (beyond them: too complex); `steps` is how many it took.
 */
export function judgeAmbiguity(pattern: PatternNode, maxSteps = MAX_ANALYSIS_STEPS): { verdict: AmbiguityVerdict; steps: number } {
  const expand = expandedPositions(pattern, MAX_EXPANDED_POSITIONS) <= MAX_EXPANDED_POSITIONS;
  const automaton = new PositionAutomaton(expand);
  automaton.build(pattern);
  const spent = { steps: 0 };
  const verdict = judge(automaton, Math.min(maxSteps, MAX_ANALYSIS_STEPS), spent);
  return { verdict, steps: spent.steps };
}
