;;; eglot_common.el --- what every eglot driver of the tests shares -*- lexical-binding: t -*-

;; Loaded by eglot_check.el, eglot_completion.el and eglot_rename.el: the vault in
;; $AUTODOC_VAULT, `autodoc serve' (run by $AUTODOC_PYTHON, no embeddings) as the server of
;; `text-mode' buffers, and a wait that lets the server's messages in.

(require 'eglot)
(require 'json)
(require 'subr-x)
(require 'cl-lib)

(defvar autodoc-vault (file-name-as-directory (getenv "AUTODOC_VAULT")))

(add-to-list 'eglot-server-programs
             `(text-mode . (,(getenv "AUTODOC_PYTHON") "-m" "autodoc" "serve"
                            :initializationOptions (:embedding "none"))))

(defun autodoc-wait (pred seconds)
  "Let the server's messages in until PRED holds or SECONDS pass; PRED's value."
  (let ((deadline (+ (float-time) seconds)) value)
    (while (and (not (setq value (funcall pred))) (< (float-time) deadline))
      (accept-process-output nil 0.1))
    value))
