import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { SIGN_UP_ROUTE } from "../sign-up-policy.ts";
import { App } from "./app.tsx";
import { SignUpPage } from "./pages/sign-up.tsx";
import "./styles.css";

const root = document.getElementById("root");
if (root) {
  createRoot(root).render(
    <StrictMode>
      {/* The sign-up page is a document of its own, with the content policy that admits Stripe. */}
      {globalThis.location.pathname === SIGN_UP_ROUTE ? <SignUpPage /> : <App />}
    </StrictMode>,
  );
}
