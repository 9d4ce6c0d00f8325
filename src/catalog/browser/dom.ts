/**
 * Views (../view.ts) made into DOM nodes: elements by createElement, attributes by setAttribute,
 * text by text nodes. Nothing is ever parsed as HTML.
 */
import type { View, ViewChild } from '../view.js';

/** The DOM node of a view. */
export function toDom(view: View): Node {
  if (typeof view === 'string') return document.createTextNode(view);
  const node = document.createElement(view.tag);
  for (const [name, value] of Object.entries(view.attrs)) node.setAttribute(name, value);
  for (const child of view.children) node.appendChild(toDom(child));
  return node;
}

/** The nodes of `views`, in one fragment. */
export function fragmentOf(views: readonly View[]): DocumentFragment {
  const fragment = document.createDocumentFragment();
  for (const view of views) fragment.appendChild(toDom(view));
  return fragment;
}

/** Appends `views` (views, text, nodes; absent ones left out, arrays spread) to `parent`; returns it. */
export function append<T extends Node>(parent: T, ...views: (ViewChild | Node)[]): T {
  for (const view of views) {
    if (view === null || view === undefined || view === false || view === '') continue;
    if (view instanceof Node) parent.appendChild(view);
    else if (Array.isArray(view)) append(parent, ...(view as readonly ViewChild[]));
    else parent.appendChild(toDom(view as View));
  }
  return parent;
}
