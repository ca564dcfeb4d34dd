// A menu button (the WAI-ARIA pattern): a button that opens a `menu` of `menuitem`s. Enter, Space
// or ArrowDown open it on the first item, ArrowUp on the last; the arrows, Home, End and a
// letter move between items; Escape closes it and focus returns to the button. The menu is a
// popover, so it sits in the top layer: a table box that scrolls sideways does not clip it.
import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';

export interface MenuItem {
  key: string;
  label: ComponentChildren;
  /** Its words, for the letter keys (the label may hold markup). */
  text: string;
  /** A link (a menuitem that navigates), or an action. */
  href?: string;
  onSelect?: () => void;
  disabled?: boolean;
  danger?: boolean;
}

export interface MenuButtonProps {
  /** The button's accessible name, which also names the menu: "More actions for Hello". */
  label: string;
  /** What the button shows; `label` is read instead. */
  children: ComponentChildren;
  items: MenuItem[];
  class?: string;
}

export function MenuButton({ label, children, items, class: className }: MenuButtonProps) {
  const id = useId();
  const button = useRef<HTMLButtonElement>(null);
  const menu = useRef<HTMLDivElement>(null);
  const [open, setOpen] = useState(false);
  /** Which item takes focus once the menu shows. */
  const focusOnOpen = useRef<'first' | 'last'>('first');

  const entries = () => [...(menu.current?.querySelectorAll<HTMLElement>('[role="menuitem"]') ?? [])];
  const focusAt = (index: number) => {
    const all = entries();
    if (all.length) all[(index + all.length) % all.length]!.focus();
  };

  const show = (where: 'first' | 'last') => {
    focusOnOpen.current = where;
    if (menu.current?.matches(':popover-open')) focusAt(where === 'first' ? 0 : -1);
    else menu.current?.showPopover();
  };
  const hide = (refocus: boolean) => {
    if (menu.current?.matches(':popover-open')) menu.current.hidePopover();
    if (refocus) button.current?.focus();
  };

  // The popover's own toggle (light dismiss included) is the one source of `open`.
  useEffect(() => {
    const el = menu.current;
    if (!el) return;
    const onToggle = (event: Event) => {
      const opened = (event as ToggleEvent).newState === 'open';
      setOpen(opened);
      if (opened) {
        place();
        focusAt(focusOnOpen.current === 'first' ? 0 : -1);
      } else if (el.contains(document.activeElement)) {
        button.current?.focus();
      }
    };
    el.addEventListener('toggle', onToggle);
    return () => el.removeEventListener('toggle', onToggle);
  }, []);

  // Beside its button, inside the window: below and right-aligned, above when there is no room.
  const place = () => {
    const el = menu.current;
    const anchor = button.current?.getBoundingClientRect();
    if (!el || !anchor) return;
    const { width, height } = el.getBoundingClientRect();
    const margin = 8;
    const left = Math.min(Math.max(anchor.right - width, margin), innerWidth - width - margin);
    const below = anchor.bottom + 4;
    const top = below + height <= innerHeight - margin || anchor.top - height - 4 < margin ? below : anchor.top - height - 4;
    el.style.left = `${Math.max(left, margin)}px`;
    el.style.top = `${top}px`;
  };
  // While open it follows its button through scrolling (the page's or the table's) and resizing.
  useEffect(() => {
    if (!open) return;
    addEventListener('scroll', place, true);
    addEventListener('resize', place);
    return () => {
      removeEventListener('scroll', place, true);
      removeEventListener('resize', place);
    };
  }, [open]);

  const onButtonKey = (event: KeyboardEvent) => {
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      show(event.key === 'ArrowDown' ? 'first' : 'last');
    }
  };

  const onMenuKey = (event: KeyboardEvent) => {
    const all = entries();
    const at = all.indexOf(document.activeElement as HTMLElement);
    switch (event.key) {
      case 'ArrowDown': focusAt(at + 1); break;
      case 'ArrowUp': focusAt(at - 1); break;
      case 'Home': focusAt(0); break;
      case 'End': focusAt(-1); break;
      case 'Escape': hide(true); break;
      // Tab leaves the menu: it closes, and focus goes on from its button.
      case 'Tab': button.current?.focus(); hide(false); return;
      default: {
        if (event.key.length !== 1 || event.ctrlKey || event.metaKey || event.altKey) return;
        const letter = event.key.toLowerCase();
        const texts = items.map((item) => item.text.toLowerCase());
        const next = [...texts.keys()].map((i) => (at + 1 + i) % texts.length).find((i) => texts[i]!.startsWith(letter));
        if (next !== undefined) focusAt(next);
      }
    }
    event.preventDefault();
  };

  const select = (item: MenuItem, event: MouseEvent) => {
    if (item.disabled) {
      event.preventDefault();
      return;
    }
    hide(true);
    item.onSelect?.();
  };

  return (
    <>
      <button
        ref={button}
        type="button"
        class={className}
        aria-haspopup="menu"
        aria-expanded={open ? 'true' : 'false'}
        aria-controls={id}
        // The browser toggles the popover: a click on its own button is not taken for a click outside.
        popovertarget={id}
        onClick={() => (focusOnOpen.current = 'first')}
        onKeyDown={onButtonKey}
      >
        {children}
        <span class="visually-hidden">{label}</span>
      </button>
      <div ref={menu} id={id} popover="auto" role="menu" aria-label={label} class="menu" onKeyDown={onMenuKey}>
        {items.map((item) => {
          const itemClass = `menu-item${item.danger ? ' danger' : ''}`;
          return item.href !== undefined && !item.disabled ? (
            <a key={item.key} role="menuitem" tabIndex={-1} class={itemClass} href={item.href} onClick={(e) => select(item, e)}>
              {item.label}
            </a>
          ) : (
            <button key={item.key} type="button" role="menuitem" tabIndex={-1} class={itemClass}
              aria-disabled={item.disabled ? 'true' : undefined} onClick={(e) => select(item, e)}>
              {item.label}
            </button>
          );
        })}
      </div>
    </>
  );
}
