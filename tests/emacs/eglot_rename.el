;;; eglot_rename.el --- rename a heading through `autodoc serve' from eglot -*- lexical-binding: t -*-

;; Run by tests/editors/test_emacs.py: `emacs --batch -l eglot_rename.el'.  It opens
;; notes/search-pipeline.md of the vault in $AUTODOC_VAULT, waits until the server has indexed
;; the vault, runs `eglot-rename' on the heading named in $AUTODOC_HEADING_LINE (1-based) with
;; the new name $AUTODOC_NEW_NAME, saves every buffer the edit changed, and prints one JSON
;; object on its last line of stdout: the files' text after the save.  No assertion here.

(load (expand-file-name "eglot_common.el" (file-name-directory load-file-name)) nil t)

(defun autodoc-read (rel)
  (with-temp-buffer
    (insert-file-contents (expand-file-name rel autodoc-vault))
    (buffer-string)))

(let* ((buf (find-file-noselect (expand-file-name "notes/search-pipeline.md" autodoc-vault)))
       (error-message nil))
  (with-current-buffer buf
    (text-mode)
    (apply #'eglot (eglot--guess-contact))
    (autodoc-wait (lambda () (eglot-current-server)) 60)
    ;; the server answers once it has indexed: wait for a symbol outside the note's folder
    (autodoc-wait (lambda ()
                    (> (length (jsonrpc-request (eglot-current-server) :workspace/symbol
                                                '(:query "lease recovery")))
                       0))
                  90)
    (goto-char (point-min))
    (forward-line (1- (string-to-number (getenv "AUTODOC_HEADING_LINE"))))
    (search-forward " ")                ; into the heading's words
    ;; the edit reaches a file no buffer visits: eglot asks first; the person says yes
    (cl-letf (((symbol-function 'y-or-n-p) (lambda (&rest _) t)))
      (condition-case err
          (eglot-rename (getenv "AUTODOC_NEW_NAME"))
        (error (setq error-message (error-message-string err)))))
    (save-some-buffers t))
  (princ "\n")
  (princ (json-encode
          `((error . ,error-message)
            (pipeline . ,(autodoc-read "notes/search-pipeline.md"))
            (linking . ,(autodoc-read "notes/linking.md")))))
  (princ "\n")
  (kill-emacs 0))
