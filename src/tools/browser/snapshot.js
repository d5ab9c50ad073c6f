// odek's browser tool, run in the isolated world "odek": the page as text with [ref]s, and the actions on them
var O={m:new Map(),
t:s=>(s==null?'':String(s)).replace(/\s+/g,' ').trim(),
q:s=>{s=O.t(s);return JSON.stringify(s.length>80?s.slice(0,79)+'…':s)},
k(e){let n=e.tagName,y=n=='INPUT'?e.type:'',r=e.getAttribute('role');
if(n=='A'&&e.hasAttribute('href'))return'link';
if(n=='BUTTON'||n=='SUMMARY'||/^(submit|button|reset|image)$/.test(y))return'button';
if(n=='SELECT')return'select';
if(n=='TEXTAREA'||/^(text|email|search|url|tel|number)$/.test(y))return'textbox';
if(y)return y=='hidden'?'':y;
if(e.isContentEditable&&!e.parentElement?.isContentEditable)return'textbox';
return/^(button|link|checkbox|radio|switch|tab|menuitem|option|textbox|searchbox|combobox)$/.test(r)?r:''},
nm(e,k){let a=e.getAttribute('aria-label'),b=e.getAttribute('aria-labelledby');
if(a)return a;
if(b)return b.split(/\s+/).map(i=>document.getElementById(i)?.innerText||'').join(' ');
if(e.labels&&k!='button')return e.labels[0]?.innerText||e.placeholder||e.title||e.name||'';
return e.innerText||e.value||e.title||e.alt||e.querySelector('img')?.alt||''},
d(e){let k=O.k(e)||e.tagName.toLowerCase();return k+' '+O.q(O.nm(e,k))},
ln(e,k,n){let s='['+n+'] '+k+' '+O.q(O.nm(e,k)),v=e.value,c=e.checked;
if(k=='link'){let h=e.href;if(h&&!/^javascript:/i.test(h))s+=' → '+(e.origin==location.origin?e.pathname+e.search+e.hash:h)}
else if(/^(checkbox|radio|switch)$/.test(k))s+=(c??e.getAttribute('aria-checked')=='true')?' checked':' unchecked';
else if(k=='select'){let o=[...e.options];s+=' value='+O.q(e.selectedOptions[0]?.text)+' options: '+o.slice(0,30).map(x=>O.q(x.text)).join(' ')+(o.length>30?' …':'')}
else if(k=='password')s+=v?' (filled)':'';
else if(k=='textbox')s+=' value='+O.q(typeof v=='string'?v:e.innerText);
else if(k!='button'&&typeof v=='string')s+=' value='+O.q(v);
if(e.disabled||e.getAttribute('aria-disabled')=='true')s+=' disabled';
return s},
snap(){let o=[],c='',m=O.m=new Map(),f=()=>{c=O.t(c);if(c)o.push(c);c=''},
w=x=>{if(x.nodeType==3){if(!x.parentNode.closest?.('label')?.control)c+=x.data;return}
let g=x.tagName;if(x.nodeType!=1||/^(SCRIPT|STYLE|NOSCRIPT|TEMPLATE|svg|math)$/.test(g))return;
let d=getComputedStyle(x).display,b=!/^(inline|contents|table-cell)/.test(d),h=/^H[1-6]$/.test(g),k=O.k(x);
if(d=='none'||d!='contents'&&!x.checkVisibility({checkVisibilityCSS:true,visibilityProperty:true}))return;
if(g=='BR')return f();
if(g=='IFRAME'){f();let i=x.contentDocument;if(i?.body)w(i.body);else if(x.clientWidth)o.push('[iframe '+O.q(x.src)+' not read: open it]');return f()}
if(d=='table-cell'&&O.t(c))c+=' | ';
if(b||h)f();
if(h)c='#'.repeat(g[1])+' ';
if(k){m.set(m.size+1,x);if(k!='link')f();c+=' '+O.ln(x,k,m.size)+' ';if(k!='link')f()}
else if(g=='PRE')o.push(x.innerText);
else for(let y of g=='DETAILS'&&!x.open?[x.querySelector('summary')||'']:x.shadowRoot?x.shadowRoot.childNodes:g=='SLOT'&&x.assignedNodes().length?x.assignedNodes():x.childNodes)w(y);
if(b||h)f()};
w(document.body||document.documentElement);f();
return'URL: '+location.href+'\nTitle: '+document.title+'\n\n'+o.join('\n')},
el(r,s){let e;
if(s!=null){try{e=document.querySelector(s)}catch(x){throw'not a CSS selector: '+JSON.stringify(s)}if(!e)throw'nothing on the page matches '+JSON.stringify(s)}
else if(!(e=O.m.get(+String(r).replace(/\D/g,''))))throw'no element ['+r+'] here: take a snapshot first (refs come from the last one)';
else if(!e.isConnected)throw'element ['+r+'] left the page: take a new snapshot';
return e},
pt(r,s){let e=O.c=O.el(r,s);e.scrollIntoView({block:'center',inline:'center',behavior:'instant'});
let b=e.getBoundingClientRect(),x=b.left+b.width/2,y=b.top+b.height/2,h=e.ownerDocument.elementFromPoint(x,y),X=x,Y=y;
for(let v=e.ownerDocument.defaultView;v.frameElement;v=v.parent){let f=v.frameElement,c=f.getBoundingClientRect();X+=c.left+f.clientLeft;Y+=c.top+f.clientTop}
return{x:X,y:Y,h:!!h&&b.width>0&&(h==e||e.contains(h)),d:O.d(e)}},
ck(){O.c.click()},
fo(r,s){let e=O.el(r,s);
if(!e.isContentEditable&&e.tagName!='TEXTAREA'&&!(e.tagName=='INPUT'&&!/^(checkbox|radio|submit|button|reset|image|file|range|color)$/.test(e.type)))throw O.d(e)+' takes no text: click or select it';
e.scrollIntoView({block:'center',behavior:'instant'});e.focus();if(e.select)e.select();else getSelection().selectAllChildren(e);
if(!e.matches(':focus-within'))throw O.d(e)+' cannot take the focus (disabled?)';
return O.d(e)},
se(r,s,v){let e=O.el(r,s),o=[...(e.options||[])],l=O.t(v).toLowerCase(),p=o.find(x=>x.value==v)||o.find(x=>O.t(x.text).toLowerCase()==l);
if(e.tagName!='SELECT')throw O.d(e)+' is not a select';
if(!p)throw'no option '+JSON.stringify(v)+' in '+O.d(e)+'; its options: '+o.map(x=>O.q(x.text)).join(' ');
p.selected=true;e.dispatchEvent(new Event('input',{bubbles:true}));e.dispatchEvent(new Event('change',{bubbles:true}));
return'selected '+O.q(p.text)+' in '+O.d(e)},
has(x,r,s){if(x!=null)return O.t((document.body||document.documentElement).innerText).includes(O.t(x));
if(s!=null){let e=document.querySelector(s);return!!e&&e.checkVisibility()}
return O.el(r).checkVisibility()},
u:()=>location.href};
