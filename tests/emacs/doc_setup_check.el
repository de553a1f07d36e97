;;; doc_setup_check.el --- doc/editors.md's Emacs set-up, as a reader runs it -*- lexical-binding: t -*-

;; Run by tests/editors/test_emacs.py in `emacs -nw' on a pseudo-terminal, with doc/editors.md's
;; set-up as ~/.emacs.d/init.el and the Debian packages the page names: `emacs -nw -l
;; doc_setup_check.el NOTE'.  Emacs visits NOTE as it visits any file; one command runs, as a
;; person's first key would (`eglot-ensure' connects after a command); then this waits until
;; Flymake shows $AUTODOC_EXPECT diagnostics in the note, or $AUTODOC_WAIT_S seconds pass,
;; writes what it found to $AUTODOC_OUT as JSON, and exits.  No assertion here: the test reads
;; it.

(require 'json)
(require 'subr-x)

(defvar autodoc-note (expand-file-name (getenv "AUTODOC_NOTE")))
(defvar autodoc-expect (string-to-number (getenv "AUTODOC_EXPECT")))
(defvar autodoc-deadline (+ (float-time) (string-to-number (getenv "AUTODOC_WAIT_S"))))

(defun autodoc-flymake-diagnostics ()
  "[type line text] of each diagnostic Flymake holds in the current buffer."
  (vconcat
   (mapcar (lambda (d)
             (vector (symbol-name (flymake-diagnostic-type d))
                     (line-number-at-pos (flymake-diagnostic-beg d))
                     (buffer-substring-no-properties (flymake-diagnostic-beg d)
                                                     (flymake-diagnostic-end d))))
           (and (bound-and-true-p flymake-mode) (flymake-diagnostics)))))

(defun autodoc-found (buffer)
  "What a person sees in BUFFER: its mode, whether eglot manages it, Flymake's mode line."
  (with-current-buffer buffer
    `((mode . ,(symbol-name major-mode))
      (eglot . ,(and (fboundp 'eglot-current-server) (eglot-current-server) t))
      (flymake . ,(if (bound-and-true-p flymake-mode)
                      (string-trim (format-mode-line flymake-mode-line-format nil nil buffer))
                    ""))
      (diagnostics . ,(autodoc-flymake-diagnostics)))))

(defun autodoc-poll ()
  "Write what the note shows and exit once its diagnostics are in, or the time is up."
  (let* ((buffer (get-file-buffer autodoc-note))
         (found (and buffer (autodoc-found buffer))))
    (when (or (> (float-time) autodoc-deadline)
              (>= (length (alist-get 'diagnostics found)) autodoc-expect))
      (with-temp-file (getenv "AUTODOC_OUT")
        (insert (json-encode (or found '((mode . "no buffer visits the note"))))))
      (kill-emacs 0))))

;; A person's first key once the note is shown (C-l: recenter), then the wait.
(run-with-timer 0.5 nil (lambda () (setq unread-command-events (listify-key-sequence "\C-l"))))
(run-with-timer 1 0.2 #'autodoc-poll)
