;;; eglot_completion.el --- link completion from Emacs's eglot in batch mode -*- lexical-binding: t -*-

;; Run by tests/editors/test_emacs.py: `emacs --batch -l eglot_completion.el'.  It opens a new note
;; of the vault in $AUTODOC_VAULT, waits until the server has indexed the vault, types a wiki
;; link's start, runs `completion-at-point' (eglot's, as M-x completion-at-point would), asks
;; where the link it inserted leads (textDocument/definition), and prints one JSON object on
;; its last line of stdout.  No assertion here: the test reads it.

(load (expand-file-name "eglot_common.el" (file-name-directory load-file-name)) nil t)

(defun autodoc-complete (typed)
  "On a new last line, insert TYPED and run `completion-at-point'; the line it leaves."
  (goto-char (point-max))
  (insert "\n" typed)
  (eglot--signal-textDocument/didChange)
  (completion-at-point)
  (buffer-substring-no-properties (line-beginning-position) (line-end-position)))

(let* ((buf (find-file-noselect (expand-file-name "notes/draft.md" autodoc-vault)))
       (ready nil) (line nil) (target nil))
  (with-current-buffer buf
    (text-mode)
    (insert "# Draft\n")
    (apply #'eglot (eglot--guess-contact))
    (autodoc-wait (lambda () (eglot-current-server)) 60)
    ;; the server answers once it has indexed: wait for a symbol of the vault
    (setq ready (autodoc-wait
                 (lambda ()
                   (> (length (jsonrpc-request (eglot-current-server) :workspace/symbol
                                               '(:query "search pipeline")))
                      0))
                 90))
    (setq line (autodoc-complete "See [[Sea"))
    (eglot--signal-textDocument/didChange)
    (let ((found (jsonrpc-request
                  (eglot-current-server) :textDocument/definition
                  (list :textDocument (eglot--TextDocumentIdentifier)
                        :position (list :line (1- (line-number-at-pos))
                                        :character 8)))))
      (when (vectorp found) (setq found (and (> (length found) 0) (aref found 0))))
      (when found
        (setq target (file-relative-name (eglot--uri-to-path (plist-get found :uri))
                                         autodoc-vault))))
    (set-buffer-modified-p nil))
  (princ "\n")
  (princ (json-encode `((ready . ,(and ready t)) (line . ,line) (target . ,target))))
  (princ "\n")
  (kill-emacs 0))
