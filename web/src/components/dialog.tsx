// A modal dialog on the platform's <dialog>: focus is moved in and kept there, Escape closes
// it, and it is named by its heading (role dialog, accessible name = title).
import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef } from 'preact/hooks';

export interface DialogProps {
  title: string;
  open: boolean;
  onClose: () => void;
  children: ComponentChildren;
}

export function Dialog({ title, open, onClose, children }: DialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const headingId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  return (
    <dialog ref={ref} aria-labelledby={headingId} onClose={onClose} onCancel={(e) => { e.preventDefault(); onClose(); }}>
      {open && (
        <>
          <h2 id={headingId}>{title}</h2>
          {children}
        </>
      )}
    </dialog>
  );
}
